package redis

import (
	"bufio"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestMeasureResubscribe measures how long after Redis accepts connections
// again the pub/sub connection is subscribed again (the subscription-lost
// report marks that point). It runs only when GYRE_MEASURE_RESUBSCRIBE
// gives the number of outages; GYRE_MEASURE_OUTAGE (a Go duration,
// default 3s) is how long each outage lasts, long enough for a backoff to
// reach its cap. The figures go to docs/benchmarks.md, not into
// assertions:
//
//	GYRE_MEASURE_RESUBSCRIBE=10 go test -run TestMeasureResubscribe -v ./broker/redis/
func TestMeasureResubscribe(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("GYRE_MEASURE_RESUBSCRIBE"))
	if runs <= 0 {
		t.Skip("set GYRE_MEASURE_RESUBSCRIBE to the number of outages to measure")
	}
	outage := 3 * time.Second
	if s := os.Getenv("GYRE_MEASURE_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("GYRE_MEASURE_OUTAGE: %v", err)
		}
		outage = d
	}
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second})
	const ch = "measure"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	var took []time.Duration
	for i := range runs {
		srv.Stop()
		eventually(t, "the outage to be noticed", func() bool { return b.Healthy() != nil })
		time.Sleep(outage)
		// Watch the port from before the start, so that the moment
		// Redis answers is known to the millisecond rather than to
		// Restart's own polling.
		up := make(chan time.Time, 1)
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if answersPing(srv.Addr) {
					up <- time.Now()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		srv.Restart()
		waitLost(t, ev, ch)
		resubscribed := time.Now()
		close(done)
		var answered time.Time
		select {
		case answered = <-up:
		case <-time.After(5 * time.Second):
			t.Fatal("the watcher never saw Redis answer")
		}
		d := resubscribed.Sub(answered)
		took = append(took, d)
		t.Logf("outage %d: resubscribed %v after Redis answered", i+1, d.Round(time.Millisecond))
	}
	slices.Sort(took)
	t.Logf("%d outages of %v: min %v, median %v, max %v", runs, outage,
		took[0].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
}

// answersPing reports whether a Redis at addr answers an inline PING.
func answersPing(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}
