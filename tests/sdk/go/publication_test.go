package sdk

import (
	"testing"

	"github.com/centrifugal/centrifuge-go"
)

// payload exercises what JSON carries: nesting, every scalar type, non-ASCII
// text and characters JSON must escape.
var payload = map[string]any{
	"text":    "hello",
	"n":       42,
	"f":       -1.5,
	"ok":      true,
	"nothing": nil,
	"list":    []any{1, "two", false, map[string]any{"three": 3}},
	"nested": map[string]any{
		"unicode": "héllo ✓ 🚀 中文",
		"escapes": "quote \" backslash \\ newline \n tab \t <html> &amp;",
	},
}

func TestAPIPublicationArrivesWithDataIntact(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		ch := channel("news-")
		s := newSub(t, c, ch, centrifuge.SubscriptionConfig{})
		s.subscribe(t)

		publish(t, ch, payload)
		ev := s.pubs.wait(t, 0, nil)
		sameJSON(t, "publication", ev.Data, payload)
		if ev.Offset != 0 {
			t.Errorf("publication in a channel without history has offset %d", ev.Offset)
		}
	})
}

func TestClientPublishesWhereAllowed(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{user: "carol"})
		conn := c.connect(t)
		ch := channel("chat:pub-")
		s := newSub(t, c, ch, centrifuge.SubscriptionConfig{})
		s.subscribe(t)

		if _, err := s.Publish(ctx(t), []byte(`{"from":"client"}`)); err != nil {
			t.Fatalf("publish: %v", err)
		}
		ev := s.pubs.wait(t, 0, nil)
		sameJSON(t, "publication", ev.Data, map[string]any{"from": "client"})
		if ev.Info == nil {
			t.Fatalf("publication from a client carries no client info: %s", show([]centrifuge.PublicationEvent{ev}))
		}
		if ev.Info.User != "carol" || ev.Info.Client != conn.ClientID {
			t.Fatalf("publication info %+v, want user carol and client %s", ev.Info, conn.ClientID)
		}
		if ev.Offset == 0 {
			t.Fatal("a publication in a history channel has no offset")
		}
	})
}
