package gyre_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/protocol"
)

// TestMapBadInput: map subscribe and publish requests that cannot be
// served get the protocol's error, each with a log line, and leave the
// connection open.
func TestMapBadInput(t *testing.T) {
	stream := gyre.Namespace{Name: "chat", ChannelOptions: gyre.ChannelOptions{AllowSubscribeForClient: true, AllowPublishForClient: true}}
	closed := mapNS("closed", gyre.MapModePersistent)
	open := mapNS("open", gyre.MapModePersistent, func(o *gyre.ChannelOptions) { o.Map.AllowPublishForClient = true })
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		logs := &logtest.Recorder{MinLevel: slog.LevelDebug}
		cfg := mapConfig(stream, closed, open)
		cfg.Logger = slog.New(logs)
		n, url := newTestNode(t, e.Config(t, cfg))
		// A state big enough to take several pages on every engine.
		for k := range 1000 {
			mapPut(t, n, "per:many", "k"+strconv.Itoa(k), keyData(k, 0))
			mapPut(t, n, "per:other", "k"+strconv.Itoa(k), keyData(k, 0))
		}
		protocols(t, func(t *testing.T, proto protocol.Type) {
			c := dial(t, url, proto)
			c.connect(connToken(t, "u1", 0, nil))
			first := func(ch string) *protocol.SubscribeResult {
				t.Helper()
				r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Type: typeMap, Phase: phaseState, Limit: 10})
				if r.Error != nil || r.Subscribe.Cursor == "" {
					t.Fatalf("first page of %s: %+v", ch, r)
				}
				return r.Subscribe
			}
			// A refused page ends the flow: each case starts its own.
			cursor := func(ch, cursor string) func() *protocol.Command {
				return func() *protocol.Command {
					page := first("per:many")
					if cursor == "" {
						cursor = page.Cursor
					}
					return subCmd(ch, phaseState, cursor, page)
				}
			}
			other := first("per:other")
			for _, tc := range []struct {
				name string
				cmd  func() *protocol.Command
				code uint32
				log  string
			}{
				{"malformed cursor", cursor("per:many", "%%%not a cursor"), 107, "map subscribe: bad state cursor"},
				{"cursor of another channel", cursor("per:many", other.Cursor), 107, "map subscribe: bad state cursor"},
				{"cursor without a subscribe in progress", cursor("per:none", ""), 103, "map subscribe: state page with a cursor but no subscribe in progress"},
				{"stream phase without state nor recovery", cmd(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "per:none", Type: typeMap, Phase: phaseStream, Offset: 1, Epoch: "e"}}), 103, "map subscribe: stream phase without state phase nor recovery"},
				{"unknown phase", cmd(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "per:x", Type: typeMap, Phase: 7}}), 107, "map subscribe: unknown phase"},
				{"map type to a stream namespace", cmd(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "chat:x", Type: typeMap, Phase: phaseState}}), 107, "subscription type does not match the namespace"},
				{"stream type to a map namespace", cmd(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "per:x"}}), 107, "subscription type does not match the namespace"},
				{"map_clients type to a map namespace", cmd(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "per:x", Type: typeMapClients, Phase: phaseState}}), 107, "subscription type does not match the namespace"},
				{"oversized key", cmd(pubCmd("open:x", strings.Repeat("k", gyre.MapMaxKeyLength+1), false)), 107, "map publish refused: key empty or too long"},
				{"empty key", cmd(pubCmd("open:x", "", false)), 107, "map publish refused: key empty or too long"},
				{"publish where not allowed", cmd(pubCmd("closed:x", "k", false)), 103, "map publish refused: not allowed"},
				{"remove where not allowed", cmd(pubCmd("closed:x", "k", true)), 103, "map remove refused: not allowed"},
				{"map publish to a stream channel", cmd(pubCmd("chat:x", "k", false)), 107, "map publish to a stream channel"},
				{"stream publish to a map channel", cmd(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "per:x", Data: []byte(`{}`)}}), 107, "stream publish to a map channel"},
				{"publish of an unknown type", cmd(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "per:x", Type: 9, Key: "k"}}), 107, "publish of an unknown type"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := c.Call(tc.cmd())
					if r.Error == nil || r.Error.Code != tc.code {
						t.Fatalf("reply %+v, want error %d", r, tc.code)
					}
					waitFor(t, "the log line", func() bool { return len(logs.Find(slog.LevelInfo, tc.log, nil)) > 0 })
				})
			}
			// The connection still serves: the flow of per:other goes on.
			v := mapSync(t, c, "per:fresh", flowOptions{})
			if v.live == nil {
				t.Fatal("no live subscription after the refusals")
			}
		})
	})
}

// cmd is a case's command, made when the case runs.
func cmd(c *protocol.Command) func() *protocol.Command { return func() *protocol.Command { return c } }

// subCmd is a subscribe command of phase with cursor, at the position of
// the page of a flow.
func subCmd(ch string, phase int32, cursor string, page *protocol.SubscribeResult) *protocol.Command {
	return &protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: ch, Type: typeMap, Phase: phase, Cursor: cursor,
		Limit: 10, Offset: page.Offset, Epoch: page.Epoch}}
}

// pubCmd is a client's write (or removal) of key.
func pubCmd(ch, key string, removed bool) *protocol.Command {
	return &protocol.Command{Publish: &protocol.PublishRequest{Channel: ch, Type: 1, Key: key, Removed: removed, Data: []byte(`{"x":1}`)}}
}

// TestMapNotAvailable: without a MapBroker, map subscribes and writes are
// not available (108) and the map API says so.
func TestMapNotAvailable(t *testing.T) {
	_, url := newTestNode(t, mapConfig())
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "u1", 0, nil))
	for _, cmd := range []*protocol.Command{
		{Subscribe: &protocol.SubscribeRequest{Channel: "per:x", Type: typeMap, Phase: phaseState}},
		pubCmd("per:x", "k", false),
	} {
		if r := c.Call(cmd); r.Error == nil || r.Error.Code != 108 {
			t.Errorf("%v: reply %+v, want 108", cmd, r)
		}
	}
}

// TestMapCatchUpTimeout: a subscriber that does not go live within the
// namespace's catch-up timeout is disconnected with 3008.
func TestMapCatchUpTimeout(t *testing.T) {
	slow := mapNS("slow", gyre.MapModePersistent, func(o *gyre.ChannelOptions) { o.Map.SubscribeCatchUpTimeout = 200 * time.Millisecond })
	eachMapEngine(t, mapConfig(slow), nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		ch := "slow:x-" + c.Protocol().String()
		for k := range 1000 {
			mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, 0))
		}
		r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Type: typeMap, Phase: phaseState, Limit: 10})
		if r.Error != nil || r.Subscribe.Cursor == "" {
			t.Fatalf("first page: %+v", r)
		}
		if ce := c.WaitClose(); ce.Code != 3008 {
			t.Fatalf("closed with %d %q, want 3008", ce.Code, ce.Reason)
		}
	})
}

// TestMapCatchUpLimit: a subscriber that would have more changes to catch
// up on when it goes live than the namespace's
// live_transition_max_publication_limit is refused with 112 (it loads
// the state again), whether the changes wait in the stream or, without
// one, were held for it while it paged.
func TestMapCatchUpLimit(t *testing.T) {
	limit := func(o *gyre.ChannelOptions) { o.Map.LiveTransitionMaxPublicationLimit = 5 }
	cfg := mapConfig(mapNS("limeph", gyre.MapModeEphemeral, limit), mapNS("limper", gyre.MapModePersistent, limit))
	eachMapEngine(t, cfg, nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		for _, ns := range []string{"limeph", "limper"} {
			t.Run(ns, func(t *testing.T) {
				ch := ns + ":x-" + c.Protocol().String()
				for k := range 1000 {
					mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, 0))
				}
				once := false
				_, err := mapSyncErr(t, c, ch, flowOptions{limit: 100, between: func(*protocol.SubscribeResult) {
					if !once {
						once = true
						for i := range 10 {
							mapPut(t, n, ch, "k"+strconv.Itoa(i), keyData(i, 1))
						}
					}
				}})
				if err == nil || err.Code != 112 {
					t.Fatalf("flow with 10 changes to catch up, limit 5: %v, want 112", err)
				}
			})
		}
	})
}
