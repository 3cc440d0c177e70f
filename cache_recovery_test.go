package gyre_test

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// recoveryModesConfig has a namespace per recovery mode, both with room
// for ten publications of history, tags filters and fossil deltas.
func recoveryModesConfig() gyre.Config {
	cfg := chatConfig()
	opts := gyre.ChannelOptions{
		AllowSubscribeForClient: true, HistorySize: 10, HistoryTTL: time.Minute,
		ForceRecovery: true, AllowTagsFilter: true, AllowedDeltaTypes: []string{"fossil"},
	}
	cached := opts
	cached.ForceRecoveryMode = "cache"
	cfg.Channels.Namespaces = append(cfg.Channels.Namespaces,
		gyre.Namespace{Name: "cache", ChannelOptions: cached},
		gyre.Namespace{Name: "stream", ChannelOptions: opts},
	)
	return cfg
}

func numbered(i int) []byte { return []byte(`{"n":` + strconv.Itoa(i) + `}`) }

// publishRange publishes numbered(i) for i in [from, to), with tags made by
// tags (nil: none), and returns the last stream position.
func publishRange(t *testing.T, n *gyre.Node, channel string, from, to int, tags func(i int) map[string]string, opts ...gyre.PublishOption) gyre.PublishResult {
	t.Helper()
	var res gyre.PublishResult
	for i := from; i < to; i++ {
		o := opts
		if tags != nil {
			o = append(o[:len(o):len(o)], gyre.WithTags(tags(i)))
		}
		var err error
		if res, err = n.Publish(channel, numbered(i), o...); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// evenTag tags numbered(i) with whether i is even.
func evenTag(i int) map[string]string { return map[string]string{"even": strconv.FormatBool(i%2 == 0)} }

// leaveAfter subscribes a client to channel, waits for the live
// publication of numbered(0) (tagged even) and disconnects. It returns the stream
// position the client saw last.
func leaveAfter(t *testing.T, n *gyre.Node, url string, proto protocol.Type, req *protocol.SubscribeRequest) (uint64, string) {
	t.Helper()
	c := dial(t, url, proto)
	c.connect(connToken(t, "42", 0, nil))
	r := c.Subscribe(req)
	if r.Error != nil || !r.Subscribe.Recoverable {
		t.Fatalf("subscribe %s: %+v", req.Channel, r)
	}
	sp := publishRange(t, n, req.Channel, 0, 1, evenTag)
	pub := c.WaitPubs(req.Channel, 1)[0]
	if pub.Offset != sp.Offset {
		t.Fatalf("live publication offset %d, want %d", pub.Offset, sp.Offset)
	}
	c.Conn().Close()
	return pub.Offset, r.Subscribe.Epoch
}

// TestCacheRecovery: a client that comes back to a channel in cache
// recovery mode gets only the latest publication, whatever it missed.
func TestCacheRecovery(t *testing.T) {
	tests := []struct {
		name   string
		missed int  // publications while the client was away
		stale  bool // the client recovers with an epoch the stream no longer has
		want   []int
	}{
		{name: "missed several", missed: 4, want: []int{4}},
		{name: "missed more than the history holds", missed: 25, want: []int{25}},
		{name: "missed one", missed: 1, want: []int{1}},
		// A client that is up to date gets nothing again, as Centrifugo does.
		{name: "missed none", missed: 0, want: nil},
		{name: "stale epoch", missed: 3, stale: true, want: []int{3}},
	}
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				protocols(t, func(t *testing.T, proto protocol.Type) {
					n, url := newTestNode(t, b.Config(t, recoveryModesConfig()))
					const ch = "cache:c"
					offset, epoch := leaveAfter(t, n, url, proto, &protocol.SubscribeRequest{Channel: ch})
					top := publishRange(t, n, ch, 1, 1+tt.missed, nil)
					if tt.missed == 0 {
						top = gyre.PublishResult{StreamPosition: gyre.StreamPosition{Offset: offset, Epoch: epoch}}
					}
					if tt.stale {
						epoch = "gone"
					}

					c := dial(t, url, proto)
					c.connect(connToken(t, "42", 0, nil))
					r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Recover: true, Offset: offset, Epoch: epoch})
					if r.Error != nil {
						t.Fatalf("recover: %+v", r.Error)
					}
					res := r.Subscribe
					// Recovered, the result keeps the client's offset and the
					// publication takes it to the top; otherwise it is the top.
					at := offset
					if tt.stale {
						at = top.Offset
					}
					if !res.WasRecovering || res.Offset != at || res.Epoch != top.Epoch {
						t.Fatalf("recover result %+v, want was_recovering at %d/%s", res, at, top.Epoch)
					}
					if !tt.stale && !res.Recovered {
						t.Fatalf("recover result %+v, want recovered", res)
					}
					if got := payloads(res.Publications); !slices.Equal(got, tt.want) {
						t.Fatalf("recovered publications %v, want %v", got, tt.want)
					}
					if len(res.Publications) > 0 && res.Publications[0].Offset != top.Offset {
						t.Fatalf("recovered offset %d, want the stream top %d", res.Publications[0].Offset, top.Offset)
					}

					// The stream goes on from the top, without a gap or a repeat.
					next := publishRange(t, n, ch, 100, 101, nil)
					live := c.WaitPubs(ch, 1)
					if len(live) != 1 || live[0].Offset != next.Offset || !bytes.Equal(live[0].Data, numbered(100)) {
						t.Fatalf("live after recovery: %v, want offset %d", live, next.Offset)
					}
				})
			})
		}
	})
}

// TestRecoveryAppliesTagsFilter: what a subscriber's filter kept from it
// live stays away when it recovers, in both recovery modes. The filter may
// come from the server (token claim), so this is about access, not only
// bandwidth.
func TestRecoveryAppliesTagsFilter(t *testing.T) {
	tests := []struct {
		channel string
		missed  int
		want    [][]int // the outcomes accepted
	}{
		{"stream:f", 5, [][]int{{2, 4}}},
		{"cache:f", 4, [][]int{{4}}},
		// The latest publication does not match: nothing, or the latest
		// one that matches, but never the latest one itself.
		{"cache:g", 5, [][]int{nil, {4}}},
	}
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		for _, tt := range tests {
			t.Run(tt.channel, func(t *testing.T) {
				protocols(t, func(t *testing.T, proto protocol.Type) {
					n, url := newTestNode(t, b.Config(t, recoveryModesConfig()))
					tf := mustParse(t, `even == "true"`)
					offset, epoch := leaveAfter(t, n, url, proto, &protocol.SubscribeRequest{Channel: tt.channel, Tf: tf})
					publishRange(t, n, tt.channel, 1, 1+tt.missed, evenTag)

					c := dial(t, url, proto)
					c.connect(connToken(t, "42", 0, nil))
					r := c.Subscribe(&protocol.SubscribeRequest{Channel: tt.channel, Tf: tf, Recover: true, Offset: offset, Epoch: epoch})
					if r.Error != nil || !r.Subscribe.Recovered {
						t.Fatalf("recover: %+v", r)
					}
					got := payloads(r.Subscribe.Publications)
					if !slices.ContainsFunc(tt.want, func(w []int) bool { return slices.Equal(got, w) }) {
						t.Fatalf("recovered publications %v, want one of %v (those the filter lets through)", got, tt.want)
					}
				})
			})
		}
	})
}

// TestCacheRecoveryDelta: the latest publication recovered by a delta
// subscriber comes in full (a JSON string on JSON connections), and the
// live deltas that follow decode against it.
func TestCacheRecoveryDelta(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, recoveryModesConfig()))
			const ch = "cache:d"
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Delta: "fossil"})
			if r.Error != nil || !r.Subscribe.Delta {
				t.Fatalf("subscribe with delta: %+v", r)
			}
			for i := range 3 {
				if _, err := n.Publish(ch, bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
			}
			seen := c.WaitPubs(ch, 3)
			c.Conn().Close()
			for i := 3; i < 7; i++ {
				if _, err := n.Publish(ch, bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
			}

			c2 := dial(t, url, proto)
			c2.connect(connToken(t, "42", 0, nil))
			r = c2.Subscribe(&protocol.SubscribeRequest{Channel: ch, Delta: "fossil", Recover: true, Offset: seen[2].Offset, Epoch: r.Subscribe.Epoch})
			if r.Error != nil || !r.Subscribe.Recovered || len(r.Subscribe.Publications) != 1 || r.Subscribe.Publications[0].Delta {
				t.Fatalf("recover: %+v", r)
			}
			for i := 7; i < 10; i++ {
				if _, err := n.Publish(ch, bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
			}
			live := c2.WaitPubs(ch, 3)
			got, deltas := decodeDeltaStream(t, proto, append(r.Subscribe.Publications, live...))
			for i, p := range got {
				if !bytes.Equal(p, bigDoc(6+i)) {
					t.Fatalf("publication %d after recovery decodes wrong: %.60q…", 6+i, p)
				}
			}
			if deltas == 0 {
				t.Fatal("no live publication after recovery came as a delta")
			}
		})
	})
}

// payloads reads back the numbers of numbered publications.
func payloads(pubs []*protocol.Publication) []int {
	var out []int
	for _, p := range pubs {
		i, err := strconv.Atoi(string(bytes.TrimSuffix(bytes.TrimPrefix(p.Data, []byte(`{"n":`)), []byte(`}`))))
		if err != nil {
			i = -1
		}
		out = append(out, i)
	}
	return out
}
