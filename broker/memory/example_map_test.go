package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
)

// printChanges stands in for the engine's hub: it prints each change of a
// map channel it is handed.
type printChanges struct{}

func (printChanges) HandleRuns(runs []broker.Run) error {
	for _, run := range runs {
		for _, rp := range run.Pubs {
			if rp.Pub.Removed {
				fmt.Printf("change %d: %s removed\n", rp.Position.Offset, rp.Pub.Key)
				continue
			}
			fmt.Printf("change %d: %s = %s\n", rp.Position.Offset, rp.Pub.Key, rp.Pub.Data)
		}
	}
	return nil
}

func ExampleMapBroker() {
	b, err := memory.NewMapBroker(memory.MapConfig{})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if err := b.Run(printChanges{}); err != nil {
		panic(err)
	}
	ctx := context.Background()
	board := broker.MapOptions{Mode: broker.MapModePersistent, StreamSize: 100, StreamTTL: time.Minute}
	if err := b.Subscribe("scores"); err != nil {
		panic(err)
	}
	for _, kv := range [][2]string{{"carol", "7"}, {"alice", "3"}, {"bob", "5"}, {"alice", "9"}} {
		if _, err := b.Publish(ctx, "scores", kv[0], broker.MapPublishOptions{Map: board, Data: []byte(kv[1])}); err != nil {
			panic(err)
		}
	}
	if _, err := b.Remove(ctx, "scores", "bob", broker.MapRemoveOptions{Map: board}); err != nil {
		panic(err)
	}

	// A subscriber pages through the state in key order, one key a page.
	cursor := ""
	for {
		page, err := b.ReadState(ctx, "scores", broker.MapStateOptions{Map: board, Cursor: cursor, Limit: 1})
		if err != nil {
			panic(err)
		}
		for _, e := range page.Entries {
			fmt.Printf("state: %s = %s (written at %d, top %d)\n", e.Key, e.Data, e.Offset, page.Position.Offset)
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	// Output:
	// change 1: carol = 7
	// change 2: alice = 3
	// change 3: bob = 5
	// change 4: alice = 9
	// change 5: bob removed
	// state: alice = 9 (written at 4, top 5)
	// state: carol = 7 (written at 1, top 5)
}
