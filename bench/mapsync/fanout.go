package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// fanoutOptions describe the fan-out mode: subs subscribers of one
// channel, a map channel or a stream one, and pubs API publications into
// it (map_publish of one of 100 keys, or publish), one after another; the
// processes of --pid are charged with the CPU time from the first
// publication to the last delivery, per delivery.
type fanoutOptions struct {
	kind    string
	subs    int
	pubs    int
	channel string
	api     string
	apiKey  string
}

// payload is the 128 bytes of JSON each publication carries, as gyre
// bench fanout's default size.
var payload = `{"p":"` + strings.Repeat("x", 128-8) + `"}`

func runFanout(ctx context.Context, o options) error {
	f := o.fanout
	if f.kind != "map" && f.kind != "stream" {
		return fmt.Errorf("--fanout %q: map or stream", f.kind)
	}
	var delivered atomic.Int64
	var subs clients
	defer subs.close()
	for i := range f.subs {
		c, err := subs.dial(ctx, o.url, o.secret, "sub-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		if f.kind == "map" {
			_, err = c.sync(f.channel, typeMap, o.limit)
		} else {
			err = c.subscribeStream(f.channel)
		}
		if err != nil {
			return err
		}
		go c.countPubs(&delivered)
	}
	fmt.Printf("fanout        %d %s subscribers of %s\n", f.subs, f.kind, f.channel)
	time.Sleep(time.Second)
	delivered.Store(0)
	cpu0 := o.pids.Sample()
	start := time.Now()
	for i := range f.pubs {
		if err := f.publish(ctx, i); err != nil {
			return err
		}
	}
	want := int64(f.subs) * int64(f.pubs)
	deadline := time.Now().Add(time.Minute)
	for delivered.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	got := delivered.Load()
	fmt.Printf("deliveries    %d of %d in %.2fs = %.0f/s\n", got, want, took.Seconds(), float64(got)/took.Seconds())
	for _, d := range o.pids.Since(cpu0) {
		fmt.Printf("              cpu %-8s %.2fs, %.3fµs per delivery\n", d.Name, d.Seconds, d.Seconds*1e6/float64(max(got, 1)))
	}
	return nil
}

func (f fanoutOptions) publish(ctx context.Context, i int) error {
	method, body := "publish", map[string]any{"channel": f.channel, "data": json.RawMessage(payload)}
	if f.kind == "map" {
		method = "map_publish"
		body["key"] = "key-" + strconv.Itoa(i%100)
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.api+"/"+method, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("X-API-Key", f.apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"error"`)) {
		return fmt.Errorf("%s: %s %s", method, resp.Status, out)
	}
	return nil
}

// countPubs reads until the connection ends, counting the publications
// pushed (without decoding them) and answering pings.
func (c *client) countPubs(n *atomic.Int64) {
	marker := []byte(`"pub":`)
	for {
		m, err := c.read()
		if err != nil {
			return
		}
		if string(bytes.TrimSpace(m)) == "{}" {
			_ = c.write(map[string]any{})
			continue
		}
		n.Add(int64(bytes.Count(m, marker)))
	}
}
