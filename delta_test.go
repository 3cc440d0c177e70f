package gyre_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/delta/fossil"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

func deltaConfig() gyre.Config {
	cfg := chatConfig()
	cfg.Channels.Namespaces = append(cfg.Channels.Namespaces, gyre.Namespace{Name: "prices", ChannelOptions: gyre.ChannelOptions{
		AllowSubscribeForClient: true, AllowedDeltaTypes: []string{"fossil"},
		HistorySize: 100, HistoryTTL: time.Minute, AllowRecovery: true,
	}})
	return cfg
}

// bigDoc is a large JSON document of which publication i changes a few
// values.
func bigDoc(i int) []byte {
	var b strings.Builder
	b.WriteString(`{"seq":`)
	fmt.Fprint(&b, i)
	b.WriteString(`,"rows":[`)
	for r := range 200 {
		if r > 0 {
			b.WriteByte(',')
		}
		price := 100 + r
		if r%50 == i%50 {
			price += i
		}
		fmt.Fprintf(&b, `{"ticker":"T%03d","price":%d,"name":"instrument number %d"}`, r, price, r)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// decodeDeltaStream rebuilds the payloads a delta subscriber received, as
// the SDK does: full payloads replace the base, deltas apply to it. On
// JSON connections the data is a JSON string.
func decodeDeltaStream(t *testing.T, proto protocol.Type, pubs []*protocol.Publication) (payloads [][]byte, deltas int) {
	t.Helper()
	var base []byte
	for i, p := range pubs {
		data := p.Data
		if proto == protocol.TypeJSON {
			var s string
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatalf("publication %d: data is not a JSON string: %v (%.40q)", i, err, data)
			}
			data = []byte(s)
		}
		if p.Delta {
			deltas++
			full, err := fossil.Apply(base, data)
			if err != nil {
				t.Fatalf("publication %d: apply delta: %v", i, err)
			}
			data = full
		}
		base = data
		payloads = append(payloads, data)
	}
	return payloads, deltas
}

func TestDeltaCompression(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, deltaConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: "prices:all", Delta: "fossil"})
			if r.Error != nil || !r.Subscribe.Delta {
				t.Fatalf("subscribe with delta: %+v", r)
			}
			plain := dial(t, url, proto)
			plain.connect(connToken(t, "43", 0, nil))
			if r := plain.Subscribe(&protocol.SubscribeRequest{Channel: "prices:all"}); r.Error != nil || r.Subscribe.Delta {
				t.Fatalf("subscribe without delta: %+v", r)
			}
			const count = 20
			var sent, wire int
			for i := range count {
				if _, err := n.Publish("prices:all", bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
				sent += len(bigDoc(i))
			}
			pubs := c.WaitPubs("prices:all", count)
			payloads, deltas := decodeDeltaStream(t, proto, pubs)
			for i, p := range payloads {
				if !bytes.Equal(p, bigDoc(i)) {
					t.Fatalf("publication %d decodes to %.60q…, want %.60q…", i, p, bigDoc(i))
				}
				wire += len(pubs[i].Data)
			}
			if pubs[0].Delta || deltas != count-1 {
				t.Fatalf("first publication delta=%v, %d deltas of %d", pubs[0].Delta, deltas, count)
			}
			t.Logf("%s: %d bytes published, %d bytes of data on the wire", proto, sent, wire)
			for i, p := range plain.WaitPubs("prices:all", count) {
				if p.Delta || !bytes.Equal(p.Data, bigDoc(i)) {
					t.Fatalf("subscriber without delta got publication %d altered", i)
				}
			}
		})
	})
}

// TestDeltaAfterRecovery: recovered publications come in full (as JSON
// strings on JSON), and the live ones that follow decode against them.
func TestDeltaAfterRecovery(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, deltaConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: "prices:r", Delta: "fossil", Recoverable: true})
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			epoch := r.Subscribe.Epoch
			for i := range 3 {
				if _, err := n.Publish("prices:r", bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
			}
			c.WaitPubs("prices:r", 3)
			c.Conn().Close()
			for i := 3; i < 6; i++ {
				if _, err := n.Publish("prices:r", bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
			}
			c2 := dial(t, url, proto)
			c2.connect(connToken(t, "42", 0, nil))
			r = c2.Subscribe(&protocol.SubscribeRequest{Channel: "prices:r", Delta: "fossil", Recoverable: true, Recover: true, Offset: 3, Epoch: epoch})
			if r.Error != nil || !r.Subscribe.Recovered || len(r.Subscribe.Publications) != 3 {
				t.Fatalf("recover: %+v", r)
			}
			for i := 6; i < 9; i++ {
				if _, err := n.Publish("prices:r", bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
			}
			live := c2.WaitPubs("prices:r", 3)
			all := append(append([]*protocol.Publication{}, r.Subscribe.Publications...), live...)
			payloads, _ := decodeDeltaStream(t, proto, all)
			for i, p := range payloads {
				if !bytes.Equal(p, bigDoc(i+3)) {
					t.Fatalf("publication %d decodes wrong", i+3)
				}
			}
		})
	})
}

func TestDeltaNotAllowed(t *testing.T) {
	_, url := newTestNode(t, deltaConfig())
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:x", Delta: "fossil"}); r.Error == nil || r.Error.Code != 107 {
		t.Fatalf("delta in a namespace without allowed_delta_types: %+v, want 107", r)
	}
}
