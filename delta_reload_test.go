package gyre_test

import (
	"bytes"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestDeltaAcrossReload: a subscriber that negotiated delta compression in
// a channel without history keeps it when a reload takes delta away from
// the namespace and gives it back; the publications made in between go to
// it in full, and the first delta after them is made against the last of
// them, so that every payload decodes to what was published. (A node
// that took delta away would otherwise publish without clearing the
// channel's delta base in Redis, and the next delta would be made against
// a publication older than the last the subscriber got.)
func TestDeltaAcrossReload(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		withDelta := func(allowed bool) gyre.ChannelConfig {
			o := gyre.ChannelOptions{AllowSubscribeForClient: true}
			if allowed {
				o.AllowedDeltaTypes = []string{"fossil"}
			}
			return gyre.ChannelConfig{Namespaces: []gyre.Namespace{{Name: "live", ChannelOptions: o}}}
		}
		cfg := chatConfig()
		cfg.Channels = withDelta(true)
		n, url := newTestNode(t, b.Config(t, cfg))
		c := dial(t, url, protocol.TypeProtobuf)
		c.connect(connToken(t, "42", 0, nil))
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "live:x", Delta: "fossil"}); r.Error != nil || !r.Subscribe.Delta {
			t.Fatalf("subscribe with delta: %+v", r)
		}
		publish := func(i int, opts ...gyre.PublishOption) {
			t.Helper()
			if _, err := n.Publish("live:x", bigDoc(i), opts...); err != nil {
				t.Fatal(err)
			}
		}
		publish(0, gyre.WithDelta())
		publish(1, gyre.WithDelta())
		if err := n.SetChannelConfig(withDelta(false)); err != nil {
			t.Fatal(err)
		}
		publish(2)
		publish(3, gyre.WithDelta())
		if err := n.SetChannelConfig(withDelta(true)); err != nil {
			t.Fatal(err)
		}
		publish(4, gyre.WithDelta())
		publish(5, gyre.WithDelta())
		pubs := c.WaitPubs("live:x", 6)
		payloads, deltas := decodeDeltaStream(t, protocol.TypeProtobuf, pubs)
		for i, p := range payloads {
			if !bytes.Equal(p, bigDoc(i)) {
				t.Fatalf("publication %d (delta %v) decodes to %.60q…, want %.60q…", i, pubs[i].Delta, p, bigDoc(i))
			}
		}
		if deltas == 0 {
			t.Error("no publication went as a delta: the test proves nothing")
		}
	})
}
