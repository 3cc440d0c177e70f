package sdk

import (
	"fmt"
	"testing"

	"github.com/centrifugal/centrifuge-go"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

func TestHistory(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		ch := channel("chat:history-")
		var published []gyretest.StreamPosition
		for n := 1; n <= 3; n++ {
			published = append(published, publish(t, ch, map[string]any{"n": n}))
		}
		top := published[2]
		s := newSub(t, c, ch, centrifuge.SubscriptionConfig{})
		s.subscribe(t)

		check := func(what string, res centrifuge.HistoryResult, wantN ...int) {
			t.Helper()
			if res.Offset != top.Offset || res.Epoch != top.Epoch {
				t.Errorf("%s: stream top %d/%q, want %d/%q", what, res.Offset, res.Epoch, top.Offset, top.Epoch)
			}
			if len(res.Publications) != len(wantN) {
				t.Fatalf("%s: %d publications, want %d: %+v", what, len(res.Publications), len(wantN), res.Publications)
			}
			for i, n := range wantN {
				p := res.Publications[i]
				if p.Offset != published[n-1].Offset {
					t.Errorf("%s: publication %d has offset %d, want %d", what, i, p.Offset, published[n-1].Offset)
				}
				sameJSON(t, fmt.Sprintf("%s: publication %d", what, i), p.Data, map[string]any{"n": n})
			}
		}

		res, err := s.History(ctx(t))
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		check("history without a limit (the stream top only)", res)

		res, err = s.History(ctx(t), centrifuge.WithHistoryLimit(10))
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		check("history, limit 10", res, 1, 2, 3)

		since := &centrifuge.StreamPosition{Offset: published[0].Offset, Epoch: top.Epoch}
		res, err = s.History(ctx(t), centrifuge.WithHistorySince(since), centrifuge.WithHistoryLimit(1))
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		check("history since the first, limit 1", res, 2)

		res, err = s.History(ctx(t), centrifuge.WithHistoryReverse(true), centrifuge.WithHistoryLimit(2))
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		check("history reversed, limit 2", res, 3, 2)
	})
}
