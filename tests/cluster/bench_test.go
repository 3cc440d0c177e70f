package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// BenchmarkAPIPublish measures publishes per second through the HTTP API
// of one node, on the memory engine and on Redis, into a channel with
// history (namespace chat) and one without. One operation is one publish;
// each is delivered to one WebSocket subscriber of the node, and the timer
// stops once the subscriber has received every publication, so the rate is
// end to end. "single" sends one publish per request from 16 concurrent
// HTTP clients, "batch100" sends batch requests of 100 publishes from 4,
// which the node runs one after the other, "batch100parallel" the same
// with "parallel": true, which the node runs 16 at a time. Publications
// of one channel still get their offsets in Redis order; a parallel batch
// only gives up the order of the batch's own publishes.
// On Redis the benchmark also reports the CPU time Redis spent (INFO cpu,
// used_cpu_user + used_cpu_sys) per 1,000 publishes.
func BenchmarkAPIPublish(b *testing.B) {
	srv := redistest.Start(b)
	engines := []struct {
		name   string
		config func(name string) gyreproc.Config
	}{
		{"memory", func(name string) gyreproc.Config {
			c := nodeConfig(name, nil)
			c.Set("engine", map[string]any{"type": "memory"})
			return c
		}},
		{"redis", func(name string) gyreproc.Config { return nodeConfig(name, redisAt(srv.Addr)) }},
	}
	for _, e := range engines {
		cfg := e.config(e.name)
		cfg.Set("log.level", "warn")
		cfg.Set("channel.without_namespace.allow_subscribe_for_client", true)
		node := gyreproc.Start(b, e.name, cfg)
		for _, ch := range []struct{ name, channel string }{{"history", "chat:bench"}, {"nohistory", "bench"}} {
			for _, mode := range []struct {
				name     string
				batch    int
				clients  int
				parallel bool
			}{{"single", 1, 16, false}, {"batch100", 100, 4, false}, {"batch100parallel", 100, 4, true}} {
				b.Run(e.name+"/"+ch.name+"/"+mode.name, func(b *testing.B) {
					var r *redistest.Server
					if e.name == "redis" {
						r = srv
					}
					benchPublish(b, node, r, ch.channel+strconv.Itoa(b.N), mode.batch, mode.clients, mode.parallel)
				})
			}
		}
	}
}

func benchPublish(b *testing.B, node *gyreproc.Node, redis *redistest.Server, channel string, batch, clients int, parallel bool) {
	sub := startCounter(b, node, channel)
	httpc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	payload := json.RawMessage(`{"type":"message","user":"42","text":"hello, world","ts":1700000000}`)
	one, _ := json.Marshal(map[string]any{"channel": channel, "data": payload})
	var cpu0 float64
	if redis != nil {
		cpu0 = redisCPU(b, redis)
	}
	var sent atomic.Int64
	b.ReportAllocs()
	b.SetParallelism((clients + 1) / 2) // GOMAXPROCS is 2 on the reference machine
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		flush := func() {
			if n == 0 {
				return
			}
			if err := postPublishes(httpc, node, one, n, parallel); err != nil {
				b.Error(err)
			}
			sent.Add(int64(n))
			n = 0
		}
		for pb.Next() {
			n++
			if n == batch {
				flush()
			}
		}
		flush()
	})
	sub.wait(b, sent.Load())
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "publishes/s")
	if redis != nil {
		b.ReportMetric((redisCPU(b, redis)-cpu0)*1000/(float64(b.N)/1000), "redis-cpu-ms/1000pub")
	}
}

// postPublishes sends n publishes of body: one publish request, or a
// batch request of n, run one after the other or, with parallel, by the
// node's batch workers at once.
func postPublishes(c *http.Client, node *gyreproc.Node, body []byte, n int, parallel bool) error {
	method, req := "publish", body
	if n > 1 {
		var buf bytes.Buffer
		buf.WriteString(`{"commands":[`)
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(`{"publish":`)
			buf.Write(body)
			buf.WriteByte('}')
		}
		buf.WriteString(`],"parallel":` + strconv.FormatBool(parallel) + `}`)
		method, req = "batch", buf.Bytes()
	}
	r, err := http.NewRequest(http.MethodPost, node.Base+"/api/"+method, bytes.NewReader(req))
	if err != nil {
		return err
	}
	r.Header.Set("X-API-Key", apiKey)
	resp, err := c.Do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"error"`)) {
		return fmt.Errorf("%s: HTTP %d: %.200s", method, resp.StatusCode, out)
	}
	return nil
}

// redisCPU returns the CPU seconds Redis used so far (user + system).
func redisCPU(b *testing.B, s *redistest.Server) float64 {
	b.Helper()
	f, err := s.CPUSeconds()
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// counter is a WebSocket subscriber that only counts the publications it
// receives, without decoding them.
type counter struct {
	got  atomic.Int64
	done chan struct{}
}

func startCounter(b *testing.B, node *gyreproc.Node, channel string) *counter {
	b.Helper()
	conn, _, _, err := ws.Dialer{Timeout: 10 * time.Second}.Dial(context.Background(), node.WSURL())
	if err != nil {
		b.Fatal(err)
	}
	frame, _ := protocol.EncodeCommand(protocol.TypeJSON, &protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: signToken(b, "bench")}})
	sub, _ := protocol.EncodeCommand(protocol.TypeJSON, &protocol.Command{Id: 2, Subscribe: &protocol.SubscribeRequest{Channel: channel}})
	if err := wsutil.WriteClientText(conn, append(append(frame, '\n'), sub...)); err != nil {
		b.Fatal(err)
	}
	c := &counter{done: make(chan struct{})}
	subscribed := make(chan error, 1)
	go c.read(conn, subscribed)
	b.Cleanup(func() {
		conn.Close()
		<-c.done
	})
	if err := <-subscribed; err != nil {
		b.Fatal(err)
	}
	return c
}

var pubMarker = []byte(`"pub":`)

func (c *counter) read(conn io.ReadWriter, subscribed chan<- error) {
	defer close(c.done)
	pending := true
	for {
		msgs, err := wsutil.ReadServerMessage(conn, nil)
		if err != nil {
			if pending {
				subscribed <- err
			}
			return
		}
		for _, m := range msgs {
			if m.OpCode != ws.OpText {
				continue
			}
			if pending && bytes.Contains(m.Payload, []byte(`"id":2`)) {
				pending = false
				if bytes.Contains(m.Payload, []byte(`"error"`)) {
					subscribed <- fmt.Errorf("subscribe: %s", m.Payload)
					return
				}
				subscribed <- nil
			}
			if bytes.Equal(m.Payload, []byte("{}")) {
				_ = wsutil.WriteClientText(conn, []byte("{}"))
			}
			c.got.Add(int64(bytes.Count(m.Payload, pubMarker)))
		}
	}
}

// wait waits until the subscriber received n publications.
func (c *counter) wait(b *testing.B, n int64) {
	deadline := time.Now().Add(time.Minute)
	for c.got.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("subscriber received %d of %d publications", c.got.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
