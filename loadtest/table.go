package loadtest

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes the summary for people: one line per measure.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	procs := "in process"
	if r.Procs > 0 {
		procs = fmt.Sprintf("%d processes", r.Procs)
	}
	if r.Sources > 0 {
		procs += fmt.Sprintf(", from %d source addresses", r.Sources)
	}
	row("scenario", "%s  %s  (%s, %s, %.1fs)", r.Scenario, r.URL, r.Protocol, procs, r.Seconds)
	c := r.Connections
	row("connections", "%s of %s opened, %s failed, %s dropped, %d subscriptions each",
		count(c.Opened), count(c.Target), count(c.Failed), count(c.Dropped), c.Subs)
	row("connect", "%s/s  latency %s", countf(c.PerSecond), pct(c.Latency))
	if p := r.Publish; p != nil {
		rate := "as fast as possible"
		if p.TargetRate > 0 {
			rate = countf(p.TargetRate) + "/s"
		}
		row("publish", "%s ×%d (batch %d, %d B, %s): %s in %.1fs = %s/s, %s errors",
			p.Method, p.Publishers, p.Batch, p.Size, rate, count(p.Publications), p.Seconds, countf(p.PerSecond), count(p.Errors))
		row("api latency", "%s", pct(p.Latency))
	}
	if d := r.Delivery; d != nil {
		row("deliveries", "%s of %s in %.2fs = %s/s", count(d.Received), count(d.Expected), d.Seconds, countf(d.PerSecond))
		row("lost", "%s (%s of %s subscribers)", count(d.Lost), count(d.LossySubscribers), count(d.Subscribers))
		row("out of order", "%s", count(d.OutOfOrder))
		row("latency", "%s", pct(d.Latency))
	}
	if s := r.Server; s != nil {
		row("server memory", "RSS %s before, %s after connecting, %s at the end: %s per connection",
			bytesIEC(float64(s.RSSBefore)), bytesIEC(float64(s.RSSAfterOpen)), bytesIEC(float64(s.RSSEnd)), bytesIEC(s.RSSPerConn))
		cpu := fmt.Sprintf("%.2fs (%.1f%% of a core)", s.CPUSeconds, s.CPUPercent)
		if s.CPUPerDeliveryMicros > 0 {
			cpu += fmt.Sprintf(", %.3fµs per delivery", s.CPUPerDeliveryMicros)
		}
		if s.CPUPerConnectMicros > 0 {
			cpu += fmt.Sprintf(", %.1fµs per connect", s.CPUPerConnectMicros)
		}
		row("server cpu", "%s", cpu)
	}
	cpu := fmt.Sprintf("%.2fs (%.1f%% of a core)", r.Client.CPUSeconds, r.Client.CPUPercent)
	if r.Client.CPUPerDeliveryMicros > 0 {
		cpu += fmt.Sprintf(", %.3fµs per delivery", r.Client.CPUPerDeliveryMicros)
	}
	row("client cpu", "%s", cpu)
	for i, e := range r.Errors {
		name := ""
		if i == 0 {
			name = "errors"
		}
		row(name, "%s × %s", count(e.Count), e.Message)
	}
	return tw.Flush()
}

func pct(p Percentiles) string {
	if p.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s  p99 %s  p99.9 %s  max %s  (%s samples)",
		micros(p.P50), micros(p.P99), micros(p.P999), micros(p.Max), count(p.Count))
}
