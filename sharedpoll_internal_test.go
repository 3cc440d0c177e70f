package gyre

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
)

// BenchmarkSharedPollCycle measures what a node spends per owned key in
// one refresh cycle besides the backend: building the batches, taking the
// answer and finding what changed (changed=0: nothing did; changed=1%: a
// key in a hundred, delivered to the nodes interested). The handler
// answers from a prepared reply, so the backend's own cost is not in it.
func BenchmarkSharedPollCycle(b *testing.B) {
	for _, versioned := range []bool{true, false} {
		for _, changedPct := range []int{0, 1} {
			name := fmt.Sprintf("versioned=%v/keys=20000/changed=%d%%", versioned, changedPct)
			b.Run(name, func(b *testing.B) {
				const keys = 20000
				opts := SharedPollOptions{Versioned: versioned, RefreshInterval: time.Hour, RefreshBatchSize: 1000}
				n, err := NewNode(Config{Insecure: true, Channels: ChannelConfig{WithoutNamespace: ChannelOptions{
					SubscriptionType: SubscriptionTypeSharedPoll, SharedPoll: opts,
				}}})
				if err != nil {
					b.Fatal(err)
				}
				values := make(map[string]SharedPollItem, keys)
				for i := range keys {
					k := "key" + strconv.Itoa(i)
					values[k] = SharedPollItem{Key: k, Data: []byte(`{"price":100.25,"qty":7}`), Version: 1}
				}
				round := uint64(1)
				n.OnSharedPollRefresh(func(_ context.Context, e SharedPollRefreshEvent) (SharedPollRefreshReply, error) {
					rep := SharedPollRefreshReply{Items: make([]SharedPollItem, 0, len(e.Items))}
					for i, it := range e.Items {
						v := values[it.Key]
						if changedPct > 0 && i%(100/changedPct) == 0 {
							v.Version = round
							v.Data = []byte(`{"price":` + strconv.FormatUint(round, 10) + `}`)
						}
						rep.Items = append(rep.Items, v)
					}
					return rep, nil
				})
				n.OnTrack(func(context.Context, *Client, TrackEvent) (TrackReply, error) { return TrackReply{}, nil })
				if err := n.Run(); err != nil {
					b.Fatal(err)
				}
				defer n.Shutdown(context.Background())
				items := make([]*controlpb.PollKey, 0, keys)
				for k := range values {
					items = append(items, &controlpb.PollKey{Key: k})
				}
				// Interest from another node: what changes is sent, not
				// pushed here.
				n.polls.onInterest("other-node", &controlpb.PollInterest{Channel: "prices", Items: items})
				ch := n.polls.channel("prices", opts, false)
				ch.mu.Lock()
				w := ch.worker
				ch.mu.Unlock()
				w.cycle(true)
				b.ReportAllocs()
				for b.Loop() {
					round++
					w.cycle(true)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
			})
		}
	}
}
