package loadtest

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
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
	where := r.URL
	if r.Churn != nil && len(r.Churn.Nodes) > 1 {
		where = fmt.Sprintf("%d nodes", len(r.Churn.Nodes)) // each on its line
	}
	row("scenario", "%s  %s  (%s, %s, %.1fs)", r.Scenario, where, r.Protocol, procs, r.Seconds)
	c := r.Connections
	if r.Churn != nil {
		r.Churn.rows(row)
	} else {
		row("connections", "%s of %s opened, %s failed, %s dropped, %d subscriptions each",
			count(c.Opened), count(c.Target), count(c.Failed), count(c.Dropped), c.Subs)
		row("connect", "%s/s  latency %s", countf(c.PerSecond), pct(c.Latency))
	}
	if line := r.Received.compressionLine(c.Opened); line != "" {
		row("compression", "%s", line)
	}
	if p := r.Publish; p != nil {
		rate := "as fast as possible"
		if p.TargetRate > 0 {
			rate = countf(p.TargetRate) + "/s"
		}
		size := fmt.Sprintf("%d B", p.Size)
		if p.Payload == PayloadJSON {
			size += " json"
		}
		row("publish", "%s ×%d (batch %d, %s, %s): %s in %.1fs = %s/s, %s errors",
			p.Method, p.Publishers, p.Batch, size, rate, count(p.Publications), p.Seconds, countf(p.PerSecond), count(p.Errors))
		row("api latency", "%s", pct(p.Latency))
	}
	if d := r.Delivery; d != nil {
		row("deliveries", "%s of %s in %.2fs = %s/s", count(d.Received), count(d.Expected), d.Seconds, countf(d.PerSecond))
		row("lost", "%s (%s of %s subscribers)", count(d.Lost), count(d.LossySubscribers), count(d.Subscribers))
		row("out of order", "%s", count(d.OutOfOrder))
		row("latency", "%s", pct(d.Latency))
	}
	if rc := r.Reconnect; rc != nil {
		rc.rows(row)
	}
	row("received", "%s", r.Received.line(r.Delivery))
	if s := r.Server; s != nil {
		procs := ""
		if len(s.PIDs) > 1 {
			procs = fmt.Sprintf(", %d processes together", len(s.PIDs))
		}
		if r.Churn != nil {
			row("server memory", "RSS %s before, %s at the end%s",
				bytesIEC(float64(s.RSSBefore)), bytesIEC(float64(s.RSSEnd)), procs)
		} else {
			row("server memory", "RSS %s before, %s after connecting, %s at the end: %s per connection%s",
				bytesIEC(float64(s.RSSBefore)), bytesIEC(float64(s.RSSAfterOpen)), bytesIEC(float64(s.RSSEnd)), bytesIEC(s.RSSPerConn), procs)
		}
		cpu := fmt.Sprintf("%.2fs (%.1f%% of a core%s)", s.CPUSeconds, s.CPUPercent, procs)
		all := ""
		if len(s.PIDs) > 1 {
			all = fmt.Sprintf(" (the CPU of all %d)", len(s.PIDs))
		}
		if s.CPUPerDeliveryMicros > 0 {
			cpu += fmt.Sprintf(", %.3fµs per delivery%s", s.CPUPerDeliveryMicros, all)
		}
		if s.CPUPerConnectMicros > 0 {
			cpu += fmt.Sprintf(", %.1fµs per connect%s", s.CPUPerConnectMicros, all)
		}
		if s.CPUPerSubscribeMicros > 0 || s.CPUPerDisconnectMicros > 0 {
			cpu += fmt.Sprintf(", %.1fµs per subscribe, %.1fµs per disconnect", s.CPUPerSubscribeMicros, s.CPUPerDisconnectMicros)
		}
		row("server cpu", "%s", cpu)
		if r.Churn == nil {
			// Churn shows each node's CPU on its node line.
			s.nodeRows(row)
		}
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

// rows are churn's lines: what was asked, the three rates with their
// latencies and failures, and each node's share when there are several.
func (ch *ChurnResult) rows(row func(name, format string, args ...any)) {
	hold := time.Duration(ch.HoldSeconds * float64(time.Second))
	rate := "as fast as connections leave"
	if ch.TargetRate > 0 {
		rate = "at most " + countf(ch.TargetRate) + " connects/s"
	}
	leave := "disconnects"
	if ch.Unsubscribe {
		leave = "unsubscribes and disconnects"
	}
	nodes := "1 node"
	if len(ch.Nodes) != 1 {
		nodes = fmt.Sprintf("%d nodes", len(ch.Nodes))
	}
	row("churn", "%s connections at a time over %s, %s users, %s channels; each stays %v (%v–%v), then %s; %s",
		count(ch.Conns), nodes, count(ch.Users), count(ch.Channels), hold, hold/2, hold*3/2, leave, rate)
	row("connects", "%s in %.1fs = %s/s, %s failed  latency %s",
		count(ch.Connects), ch.Seconds, countf(ch.ConnectsPerSecond), count(ch.ConnectErrors), pct(ch.ConnectLatency))
	row("subscribes", "%s = %s/s, %s refused  latency %s",
		count(ch.Subscribes), countf(ch.SubscribesPerSecond), count(ch.SubscribeRefused), pct(ch.SubscribeLatency))
	row("disconnects", "%s = %s/s (%s after an unsubscribe), %s dropped by the server or the network",
		count(ch.Disconnects), countf(ch.DisconnectsPerSecond), count(ch.Unsubscribes), count(ch.Dropped))
	if len(ch.Nodes) < 2 {
		return
	}
	for i, n := range ch.Nodes {
		line := fmt.Sprintf("%s  %s connects (%s failed), %s subscribes (%s refused), %s disconnects (%s dropped)",
			n.URL, count(n.Connects), count(n.ConnectErrors), count(n.Subscribes), count(n.SubscribeRefused),
			count(n.Disconnects), count(n.Dropped))
		if n.PID != 0 {
			line += fmt.Sprintf("  server cpu %.2fs (%.1f%% of a core, pid %d)", n.CPUSeconds, n.CPUPercent, n.PID)
		}
		row(fmt.Sprintf("node %d", i+1), "%s", line)
	}
}

// nodeRows are a line per process when there are several.
func (s *ServerResult) nodeRows(row func(name, format string, args ...any)) {
	for i, n := range s.Nodes {
		where := "(no --url)"
		if n.URL != "" {
			where = n.URL
		}
		memory := fmt.Sprintf("RSS %s before, %s after connecting, %s at the end", bytesIEC(float64(n.RSSBefore)),
			bytesIEC(float64(n.RSSAfterOpen)), bytesIEC(float64(n.RSSEnd)))
		if n.RSSAfterOpen == 0 {
			memory = fmt.Sprintf("RSS %s before, %s at the end", bytesIEC(float64(n.RSSBefore)), bytesIEC(float64(n.RSSEnd)))
		}
		row(fmt.Sprintf("server %d", i+1), "pid %d  %s  %s; cpu %.2fs (%.1f%% of a core)", n.PID, where, memory, n.CPUSeconds, n.CPUPercent)
	}
}

// rows are the reconnects' lines: how many came back, and how fast.
func (rc *ReconnectResult) rows(row func(name, format string, args ...any)) {
	wait := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	all := "none dropped"
	if rc.Dropped > 0 && rc.Failed == 0 {
		all = fmt.Sprintf("all back %.2fs after the first drop", rc.Seconds)
	} else if rc.Dropped > 0 {
		all = fmt.Sprintf("the last back %.2fs after the first drop", rc.Seconds)
	}
	row("reconnect", "%s dropped, %s back, %s not back by the end; %s; %s attempts, %s failed (waits from %v doubling to %v, jittered)",
		count(rc.Dropped), count(rc.Reconnected), count(rc.Failed), all, count(rc.Attempts), count(rc.FailedAttempts),
		wait(rc.FirstWaitMillis), wait(rc.MaxWaitMillis))
	row("back after", "%s", pct(rc.Latency))
}

func pct(p Percentiles) string {
	if p.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s  p99 %s  p99.9 %s  max %s  (%s samples)",
		micros(p.P50), micros(p.P99), micros(p.P999), micros(p.Max), count(p.Count))
}

// compressionLine says whether the connections negotiated compression,
// empty when they did not offer it.
func (t TrafficResult) compressionLine(opened int64) string {
	switch {
	case !t.Compression:
		return ""
	case t.Negotiated == 0:
		return fmt.Sprintf("offered; negotiated by none of %s connections: the server declined, messages came uncompressed", count(opened))
	}
	by := fmt.Sprintf("all %s connections", count(opened))
	if t.Negotiated < opened {
		by = fmt.Sprintf("%s of %s connections", count(t.Negotiated), count(opened))
	}
	takeover := "without context takeover"
	if t.ContextTakeover > 0 {
		takeover = fmt.Sprintf("%s with context takeover", count(t.ContextTakeover))
	}
	return fmt.Sprintf("offered; negotiated by %s (%s)", by, takeover)
}

// line sums up the bytes received, per delivery when there were any.
func (t TrafficResult) line(d *DeliveryResult) string {
	s := count(t.Messages) + " messages"
	if t.Compression {
		s += fmt.Sprintf(" (%s compressed)", count(t.CompressedMessages))
	}
	s += fmt.Sprintf(": %s on the wire, %s of payload", bytesIEC(float64(t.WireBytes)), bytesIEC(float64(t.MessageBytes)))
	if t.CompressedMessages > 0 {
		s += fmt.Sprintf(", ratio %.2f", t.Ratio)
	}
	if d != nil && d.Received > 0 {
		s += fmt.Sprintf("; %s B on the wire per delivery", countf(float64(t.WireBytes)/float64(d.Received)))
	}
	return s
}
