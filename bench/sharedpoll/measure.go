package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gyrehq/gyre/internal/proccpu"
)

type measureOptions struct {
	backend    string
	trackers   []string
	pids       proccpu.PIDList
	nodes      int
	interval   time.Duration
	batch      int
	window     time.Duration
	idleWindow time.Duration
	settle     time.Duration
	wait       time.Duration
}

func runMeasure(ctx context.Context, args []string) error {
	var o measureOptions
	fs := flag.NewFlagSet("measure", flag.ExitOnError)
	fs.StringVar(&o.backend, "backend", "http://127.0.0.1:18290", "the backend's base URL")
	trackers := fs.String("trackers", "http://127.0.0.1:18295", "the trackers processes' stats URLs, comma-separated")
	fs.Var(&o.pids, "pid", "NAME=PID of a process whose CPU time to report (repeatable); names starting with gyre are summed as the gyre nodes")
	fs.IntVar(&o.nodes, "nodes", 1, "gyre nodes (for the table)")
	fs.DurationVar(&o.interval, "interval", time.Second, "the namespace's refresh_interval: one cycle")
	fs.IntVar(&o.batch, "batch", 1000, "the namespace's refresh_batch_size")
	fs.DurationVar(&o.window, "window", 30*time.Second, "how long to measure, with the backend changing keys")
	fs.DurationVar(&o.idleWindow, "idle-window", 0, "first measure this long with the backend's changes paused (polling alone); 0 skips it")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "wait this long once every connection has its values")
	fs.DurationVar(&o.wait, "wait", 10*time.Minute, "give up if the connections do not all have their values by then")
	_ = fs.Parse(args)
	o.trackers = strings.Split(*trackers, ",")

	if err := o.waitSteady(ctx); err != nil {
		return err
	}
	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	if o.idleWindow > 0 {
		b, err := o.backendStats(false)
		if err != nil {
			return err
		}
		if err := o.setFraction(0); err != nil {
			return err
		}
		time.Sleep(2 * o.interval) // the changes already made reach the trackers
		r, err := o.measure(ctx, o.idleWindow)
		if err != nil {
			return err
		}
		r.print("no changes")
		if err := o.setFraction(b.Fraction); err != nil {
			return err
		}
		time.Sleep(2 * o.interval)
	}
	r, err := o.measure(ctx, o.window)
	if err != nil {
		return err
	}
	b, err := o.backendStats(false)
	if err != nil {
		return err
	}
	r.print(fmt.Sprintf("%.2f%% of keys changing per second", 100*b.Fraction))
	return nil
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (o *measureOptions) backendStats(perKey bool) (backendStats, error) {
	var s backendStats
	u := o.backend + "/stats"
	if perKey {
		u += "?per_key=1"
	}
	err := getJSON(u, &s)
	return s, err
}

func (o *measureOptions) setFraction(f float64) error {
	resp, err := http.Post(fmt.Sprintf("%s/change?fraction=%g", o.backend, f), "text/plain", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("set change fraction: %s", resp.Status)
	}
	return nil
}

func (o *measureOptions) trackerStats() ([]trackerStats, error) {
	out := make([]trackerStats, len(o.trackers))
	for i, u := range o.trackers {
		if err := getJSON(u+"/stats", &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitSteady waits until every connection of the trackers tracks its keys
// and has a value for each.
func (o *measureOptions) waitSteady(ctx context.Context) error {
	start := time.Now()
	for {
		ts, err := o.trackerStats()
		var want, tracking, complete, failed, closed, regs, regReply, repeats int64
		for _, t := range ts {
			regs += t.Regressions
			regReply += t.RegReply
			repeats += t.Repeats
			want += int64(t.Conns)
			tracking += t.Tracking
			complete += t.Complete
			failed += t.Failed
			closed += t.Closed
		}
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "%s waiting for the trackers: %v\n", time.Now().Format("15:04:05"), err)
		default:
			fmt.Fprintf(os.Stderr, "%s %ds: %d of %d connections tracking, %d with every value, %d failed, %d closed\n",
				time.Now().Format("15:04:05"), int(time.Since(start).Seconds()), tracking, want, complete, failed, closed)
			if want > 0 && complete == want {
				fmt.Printf("set-up        %d connections with every value after %.0f s; %d regressions (%d in track replies), %d repeats\n",
					complete, time.Since(start).Seconds(), regs, regReply, repeats)
				for _, t := range ts {
					for _, s := range t.Sample[:min(len(t.Sample), 2)] {
						fmt.Printf("  regression  %s\n", s)
					}
				}
				return nil
			}
			if want > 0 && complete+failed+closed >= want && time.Since(start) > time.Minute {
				fmt.Fprintf(os.Stderr, "measuring with %d connections of %d: %d failed, %d closed (see the trackers' errors)\n", complete, want, failed, closed)
				return nil
			}
		}
		if time.Since(start) > o.wait {
			return fmt.Errorf("the connections did not all get their values in %s", o.wait)
		}
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// result is what one window measured.
type result struct {
	o                       *measureOptions
	secs                    float64
	conns, slots            int64
	tracked, polled         int     // keys tracked by some connection; of them, polled in the window
	perKeyMin, perKeyMax    float64 // polls of a tracked key per cycle
	requests, asked, answer uint64
	reqMin, reqMax          uint64 // requests in one second
	nodes                   map[string]nodeCount
	changes                 uint64
	t                       trackerStats // differences
	cpu                     []proccpu.Delta
}

func (o *measureOptions) measure(ctx context.Context, d time.Duration) (*result, error) {
	b0, err := o.backendStats(true)
	if err != nil {
		return nil, err
	}
	t0, err := o.trackerStats()
	if err != nil {
		return nil, err
	}
	cpu0 := o.pids.Sample()
	r := &result{o: o, reqMin: ^uint64(0)}
	// Requests per second, to see that they are steady.
	last := b0.Requests
	tick := time.NewTicker(time.Second)
	end := time.After(d)
loop:
	for {
		select {
		case <-ctx.Done():
			tick.Stop()
			return nil, ctx.Err()
		case <-end:
			break loop
		case <-tick.C:
			s, err := o.backendStats(false)
			if err != nil {
				return nil, err
			}
			n := s.Requests - last
			last = s.Requests
			r.reqMin, r.reqMax = min(r.reqMin, n), max(r.reqMax, n)
		}
	}
	tick.Stop()
	b1, err := o.backendStats(true)
	if err != nil {
		return nil, err
	}
	t1, err := o.trackerStats()
	if err != nil {
		return nil, err
	}
	r.cpu = o.pids.Since(cpu0)
	r.secs = float64(b1.Time-b0.Time) / 1000
	r.requests, r.asked, r.answer = b1.Requests-b0.Requests, b1.Asked-b0.Asked, b1.Answered-b0.Answered
	r.changes = b1.Changes - b0.Changes
	r.nodes = make(map[string]nodeCount)
	for k, v := range b1.Nodes {
		p := b0.Nodes[k]
		r.nodes[k] = nodeCount{Requests: v.Requests - p.Requests, Keys: v.Keys - p.Keys}
	}
	// The keys the connections track, from the trackers' numbering.
	trackers := make([]int, b1.Keys)
	for _, t := range t1 {
		for g := t.First; g < t.First+t.Conns; g++ {
			for j := range t.KeysPerConn {
				if i := (g*t.Stride + j) % t.Keyspace; i < len(trackers) {
					trackers[i]++
				}
			}
		}
	}
	cycles := r.secs / o.interval.Seconds()
	r.perKeyMin = -1
	for i, n := range trackers {
		if n == 0 {
			continue
		}
		r.tracked++
		r.slots += int64(n)
		polls := float64(b1.PerKey[i]-b0.PerKey[i]) / cycles
		if polls > 0 {
			r.polled++
		}
		if r.perKeyMin < 0 || polls < r.perKeyMin {
			r.perKeyMin = polls
		}
		r.perKeyMax = max(r.perKeyMax, polls)
	}
	r.t.Lag = make([]int64, lagBuckets)
	for i := range t1 {
		a, b := &t0[i], &t1[i]
		r.conns += b.Tracking
		r.t.Closed += b.Closed - a.Closed
		r.t.Unsubscribed += b.Unsubscribed - a.Unsubscribed
		r.t.Errors += b.Errors - a.Errors
		r.t.Initial += b.Initial - a.Initial
		r.t.Updates += b.Updates - a.Updates
		r.t.Regressions += b.Regressions - a.Regressions
		r.t.Repeats += b.Repeats - a.Repeats
		r.t.Skipped += b.Skipped - a.Skipped
		r.t.Removed += b.Removed - a.Removed
		r.t.Frames += b.Frames - a.Frames
		r.t.Bytes += b.Bytes - a.Bytes
		for j := range r.t.Lag {
			r.t.Lag[j] += b.Lag[j] - a.Lag[j]
		}
		r.t.ErrorSample = append(r.t.ErrorSample, b.ErrorSample...)
		r.t.Sample = append(r.t.Sample, b.Sample...)
	}
	return r, nil
}

// percentile of the lag histogram, in ms (the bucket's upper bound).
func percentile(h []int64, p float64) string {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return "-"
	}
	want := int64(p * float64(total))
	var acc int64
	for i, n := range h {
		acc += n
		if acc > want || acc == total {
			if i == len(h)-1 {
				return fmt.Sprintf(">%d", lagMax)
			}
			return fmt.Sprintf("%d", (i+1)*lagStep)
		}
	}
	return "-"
}

func (r *result) print(label string) {
	o := r.o
	cycles := r.secs / o.interval.Seconds()
	perSec := func(n uint64) float64 { return float64(n) / r.secs }
	fmt.Printf("== %d node(s), %s: %.1f s (%.1f cycles of %s)\n", o.nodes, label, r.secs, cycles, o.interval)
	fmt.Printf("connections   %d tracking %d key slots: %d distinct keys, %.1f connections per key\n",
		r.conns, r.slots, r.tracked, float64(r.slots)/float64(max(r.tracked, 1)))
	fmt.Printf("backend       %.1f requests/s (%d to %d in a second), %.0f keys asked/s, %.0f values answered/s\n",
		perSec(r.requests), r.reqMin, r.reqMax, perSec(r.asked), perSec(r.answer))
	fmt.Printf("              %.2f requests per cycle (distinct keys / batch = %.1f); %.0f keys per request\n",
		float64(r.requests)/cycles, float64(r.tracked)/float64(o.batch), float64(r.asked)/float64(max(r.requests, 1)))
	avg := float64(r.asked) / float64(max(r.tracked, 1)) / cycles
	fmt.Printf("              %d of %d tracked keys polled; each %.2f to %.2f times per cycle, %.3f on average: every %.2f s\n",
		r.polled, r.tracked, r.perKeyMin, r.perKeyMax, avg, o.interval.Seconds()/avg)
	names := make([]string, 0, len(r.nodes))
	for k := range r.nodes {
		names = append(names, k)
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		v := r.nodes[k]
		if v.Requests == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f req/s %.0f keys/s", k, perSec(v.Requests), perSec(v.Keys)))
	}
	fmt.Printf("  per node    %s\n", strings.Join(parts, "; "))
	expected := float64(r.changes) / r.secs * float64(r.slots) / float64(max(r.tracked, 1))
	fmt.Printf("changes       %.0f keys/s at the backend: about %.0f updates/s due (changes × connections per key)\n", perSec(r.changes), expected)
	t := r.t
	fmt.Printf("delivered     %.0f updates/s (%d in all), %d versions skipped (changed twice between polls), %d initial values\n",
		float64(t.Updates)/r.secs, t.Updates, t.Skipped, t.Initial)
	fmt.Printf("              %d regressions, %d repeats, %d removals, %d unsubscribes, %d connections lost, %d errors; %.0f frames/s, %.0f KiB/s\n",
		t.Regressions, t.Repeats, t.Removed, t.Unsubscribed, t.Closed, t.Errors, float64(t.Frames)/r.secs, float64(t.Bytes)/r.secs/1024)
	fmt.Printf("lag           change at the backend to arrival: p50 %s ms, p90 %s ms, p99 %s ms, max %s ms\n",
		percentile(t.Lag, 0.5), percentile(t.Lag, 0.9), percentile(t.Lag, 0.99), percentile(t.Lag, 1))
	var gyre float64
	parts = parts[:0]
	for _, d := range r.cpu {
		if strings.HasPrefix(d.Name, "gyre") {
			gyre += d.Seconds
		}
		parts = append(parts, fmt.Sprintf("%s %.2fs (%.0f%%)", d.Name, d.Seconds, 100*d.Seconds/r.secs))
	}
	fmt.Printf("cpu           %s\n", strings.Join(parts, "; "))
	perKey := gyre / (float64(r.tracked) * cycles) * 1e6
	perConn := gyre / r.secs / float64(max(r.conns, 1)) * 1e6
	perUpdate := "-"
	if t.Updates > 0 {
		perUpdate = fmt.Sprintf("%.1f µs", gyre/float64(t.Updates)*1e6)
	}
	fmt.Printf("gyre cpu      %.2f s in all (%.0f%% of a core): %.2f µs per tracked key per cycle, %.2f µs per connection per second, %s per update delivered\n",
		gyre, 100*gyre/r.secs, perKey, perConn, perUpdate)
	// The samples are the first few since the start: shown when the
	// window had some.
	if t.Regressions > 0 {
		for _, s := range t.Sample {
			fmt.Printf("  regression  %s\n", s)
		}
	}
	if t.Errors > 0 {
		for _, s := range t.ErrorSample {
			fmt.Printf("  error       %s\n", s)
		}
	}
	fmt.Printf("| %d | %s | %d | %d | %.1f | %.0f | %.2f | %.0f | %.0f | %s / %s | %.2f s (%.0f%%) | %.2f µs | %.2f µs |\n",
		o.nodes, label, r.conns, r.tracked, perSec(r.requests), perSec(r.asked), float64(r.asked)/float64(max(r.tracked, 1))/cycles,
		float64(t.Updates)/r.secs, expected, percentile(t.Lag, 0.5), percentile(t.Lag, 0.99), gyre, 100*gyre/r.secs, perKey, perConn)
}
