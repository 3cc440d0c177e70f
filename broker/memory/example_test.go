package memory_test

import (
	"fmt"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
)

// printHandler stands in for the engine's hub: it prints each run it is
// handed, one HandleRuns call per stretch of publications of a channel.
type printHandler struct{}

func (printHandler) HandleRuns(runs []broker.Run) error {
	for _, run := range runs {
		fmt.Printf("deliver %d to %s:", len(run.Pubs), run.Channel)
		for _, rp := range run.Pubs {
			fmt.Printf(" %d %s", rp.Position.Offset, rp.Pub.Data)
		}
		fmt.Println()
	}
	return nil
}
func (printHandler) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (printHandler) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (printHandler) HandleControl([]byte) error                   { return nil }

func Example() {
	b, err := memory.NewBroker(memory.Config{})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if err := b.Run(printHandler{}); err != nil {
		panic(err)
	}

	opts := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute}
	first, _, _ := b.Publish("chat:index", []byte(`{"text":"hello"}`), opts)
	// Publications of one channel published together arrive as one run.
	items := []broker.PublishItem{
		{Channel: "chat:index", Data: []byte(`{"text":"again"}`), Opts: opts},
		{Channel: "chat:index", Data: []byte(`{"text":"and again"}`), Opts: opts},
	}
	b.PublishMany(items)

	// A client that saw the first publication recovers what followed it.
	pubs, top, err := b.History("chat:index", broker.HistoryOptions{
		Filter: broker.HistoryFilter{Since: &first, Limit: -1},
	})
	if err != nil {
		panic(err)
	}
	for _, p := range pubs {
		fmt.Printf("recovered offset %d: %s\n", p.Offset, p.Data)
	}
	fmt.Println("top offset", top.Offset, "same epoch", top.Epoch == first.Epoch)
	// Output:
	// deliver 1 to chat:index: 1 {"text":"hello"}
	// deliver 2 to chat:index: 2 {"text":"again"} 3 {"text":"and again"}
	// recovered offset 2: {"text":"again"}
	// recovered offset 3: {"text":"and again"}
	// top offset 3 same epoch true
}
