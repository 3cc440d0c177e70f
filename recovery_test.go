package gyre_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// recoveryLimitConfig has two namespaces that keep history, "h10" for ten
// publications and "h2" for two, and lets a client recover at most four
// publications.
func recoveryLimitConfig() gyre.Config {
	ns := func(name string, size int) gyre.Namespace {
		return gyre.Namespace{Name: name, ChannelOptions: gyre.ChannelOptions{
			HistorySize: size, HistoryTTL: time.Minute, ForceRecovery: true, AllowSubscribeForClient: true,
		}}
	}
	return gyre.Config{
		RecoveryMaxPublicationLimit: 4,
		Channels:                    gyre.ChannelConfig{Namespaces: []gyre.Namespace{ns("h10", 10), ns("h2", 2)}},
	}
}

// TestRecoveryOutcomes: recovered is true only when the result holds every
// publication after the client's position, in the stream the client knew.
// Otherwise the client is told it lost state and given no publication (a
// gap is never presented as a continuation), or, when its subscribe flag
// asks for it, refused with 112 so that it reloads its state; the
// connection stays in both cases. Offset 0 with no epoch asks for the
// stream from its start.
func TestRecoveryOutcomes(t *testing.T) {
	const current = "current" // the epoch the stream has
	tests := []struct {
		name      string
		ns        string
		published int
		offset    uint64
		epoch     string
		recovered bool
		want      []uint64 // offsets recovered
	}{
		{name: "missed publications held", ns: "h10", published: 5, offset: 2, epoch: current, recovered: true, want: []uint64{3, 4, 5}},
		{name: "up to date", ns: "h10", published: 5, offset: 5, epoch: current, recovered: true},
		{name: "missed as many as the limit", ns: "h10", published: 5, offset: 1, epoch: current, recovered: true, want: []uint64{2, 3, 4, 5}},
		{name: "missed more than the limit", ns: "h10", published: 6, offset: 1, epoch: current},
		{name: "missed publications evicted", ns: "h2", published: 5, offset: 1, epoch: current},
		{name: "missed exactly what is held", ns: "h2", published: 5, offset: 3, epoch: current, recovered: true, want: []uint64{4, 5}},
		{name: "another epoch", ns: "h10", published: 5, offset: 2, epoch: "gone"},
		{name: "offset past the top", ns: "h10", published: 5, offset: 9, epoch: current},
		{name: "no epoch with an offset", ns: "h10", published: 5, offset: 2},
		{name: "from the start", ns: "h10", published: 3, recovered: true, want: []uint64{1, 2, 3}},
		{name: "from the start of an empty stream", ns: "h10", recovered: true},
		{name: "from the start, evicted", ns: "h2", published: 3},
		{name: "from the start, more than the limit", ns: "h10", published: 5},
	}
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, recoveryLimitConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ch := fmt.Sprintf("%s:c%d", tt.ns, i)
					var top gyre.PublishResult
					for p := range tt.published {
						var err error
						if top, err = n.Publish(ch, numbered(p)); err != nil {
							t.Fatal(err)
						}
					}
					epoch := tt.epoch
					if epoch == current {
						epoch = top.Epoch
					}
					req := &protocol.SubscribeRequest{Channel: ch, Recover: true, Offset: tt.offset, Epoch: epoch}

					// Flag bit 2: refused with 112 where recovery is incomplete.
					rejecting := req.CloneVT()
					rejecting.Flag = 2
					r := c.Subscribe(rejecting)
					if !tt.recovered {
						if r.Error == nil || r.Error.Code != 112 {
							t.Fatalf("recover with flag 2: %+v, want error 112", r)
						}
					} else {
						checkRecovered(t, r, tt.offset, tt.want)
						c.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: ch}})
					}

					// Without the flag: a subscription that says whether it
					// recovered, and goes on from the stream's top.
					r = c.Subscribe(req)
					if r.Error != nil {
						t.Fatalf("recover: %+v", r.Error)
					}
					res := r.Subscribe
					if tt.recovered {
						checkRecovered(t, r, tt.offset, tt.want)
					} else if res.Recovered || !res.WasRecovering || len(res.Publications) != 0 || res.Offset != top.Offset {
						t.Fatalf("recover result %+v, want recovered=false, no publications, offset %d", res, top.Offset)
					}
					if top.Epoch != "" && res.Epoch != top.Epoch {
						t.Fatalf("result epoch %q, want %q", res.Epoch, top.Epoch)
					}
					next, err := n.Publish(ch, numbered(100))
					if err != nil {
						t.Fatal(err)
					}
					if live := c.WaitPubs(ch, 1); live[0].Offset != next.Offset || next.Offset != top.Offset+1 {
						t.Fatalf("live publication at %d after the top %d, published at %d", live[0].Offset, top.Offset, next.Offset)
					}
				})
			}
		})
	})
}

// checkRecovered fails unless r is a successful recovery of the
// publications at offsets want for a client at offset since. The result's
// offset is the client's: the SDK moves it through the publications as it
// hands them to the application.
func checkRecovered(t *testing.T, r *protocol.Reply, since uint64, want []uint64) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("recover: %+v", r.Error)
	}
	res := r.Subscribe
	var got []uint64
	for _, p := range res.Publications {
		got = append(got, p.Offset)
	}
	if !res.Recovered || !res.WasRecovering || !slices.Equal(got, want) || res.Offset != since {
		t.Fatalf("recover result %+v with offsets %v, want recovered %v at offset %d", res, got, want, since)
	}
	for i, p := range res.Publications {
		if want := numbered(int(want[i]) - 1); string(p.Data) != string(want) {
			t.Fatalf("publication %d: data %s, want %s", p.Offset, p.Data, want)
		}
	}
}
