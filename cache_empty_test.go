package gyre_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestCacheEmpty: a subscriber recovering in cache mode from a channel
// without publications makes the node ask the cache empty handler to
// publish the state; what it published reaches the subscriber in its
// subscribe result. A handler that publishes nothing leaves the result
// empty, one that fails refuses the subscription with 100, and a channel
// with a publication never asks.
func TestCacheEmpty(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		cfg := recoveryModesConfig()
		for i := range cfg.Channels.Namespaces {
			if cfg.Channels.Namespaces[i].Name == "cache" {
				cfg.Channels.Namespaces[i].CacheEmptyEvents = true
			}
		}
		// Asks by protocol: the protocols run side by side.
		var askedJSON, askedProtobuf atomic.Int32
		var n *gyre.Node
		n, url := newTestNodeWith(t, b.Config(t, cfg), func(node *gyre.Node) {
			node.OnCacheEmpty(func(ctx context.Context, channel string) (bool, error) {
				if strings.HasSuffix(channel, "json") {
					askedJSON.Add(1)
				} else {
					askedProtobuf.Add(1)
				}
				switch channel {
				case "cache:fill" + "json", "cache:fill" + "protobuf":
					if _, err := n.Publish(channel, numbered(7)); err != nil {
						return false, err
					}
					return true, nil
				case "cache:fail" + "json", "cache:fail" + "protobuf":
					return false, errors.New("backend down")
				}
				return false, nil
			})
		})
		protocols(t, func(t *testing.T, proto protocol.Type) {
			asked := &askedProtobuf
			if proto == protocol.TypeJSON {
				asked = &askedJSON
			}
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			sub := func(ch string) *protocol.Reply {
				return c.Subscribe(&protocol.SubscribeRequest{Channel: ch + proto.String(), Recover: true})
			}

			r := sub("cache:fill")
			if r.Error != nil || !slices.Equal(payloads(r.Subscribe.Publications), []int{7}) {
				t.Fatalf("subscribe to an empty channel the handler fills: %+v", r)
			}
			// The stream goes on after it, without a repeat.
			next := publishRange(t, n, "cache:fill"+proto.String(), 8, 9, nil)
			if live := c.WaitPubs("cache:fill"+proto.String(), 1); live[0].Offset != next.Offset || next.Offset != r.Subscribe.Publications[0].Offset+1 {
				t.Fatalf("live %v after the filled publication at %d, want offset %d", live, r.Subscribe.Publications[0].Offset, next.Offset)
			}
			r = sub("cache:nothing")
			if r.Error != nil || len(r.Subscribe.Publications) != 0 {
				t.Fatalf("subscribe to an empty channel the handler leaves empty: %+v", r)
			}
			r = sub("cache:fail")
			if r.Error == nil || r.Error.Code != 100 {
				t.Fatalf("subscribe when the handler fails: %+v, want error 100", r)
			}
			if got := asked.Load(); got != 3 {
				t.Fatalf("handler asked %d times, want 3", got)
			}
			publishRange(t, n, "cache:full"+proto.String(), 0, 1, nil)
			if r = sub("cache:full"); r.Error != nil || len(r.Subscribe.Publications) != 1 || asked.Load() != 3 {
				t.Fatalf("subscribe to a channel with a publication: %+v, handler asked %d times (want 3)", r, asked.Load())
			}
			// Stream mode never asks.
			if r = sub("stream:empty"); r.Error != nil || asked.Load() != 3 {
				t.Fatalf("stream recovery: %+v, handler asked %d times (want 3)", r, asked.Load())
			}
		})
	})
}
