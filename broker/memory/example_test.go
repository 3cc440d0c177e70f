package memory_test

import (
	"fmt"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
)

// printHandler stands in for the engine's hub.
type printHandler struct{}

func (printHandler) HandlePublication(ch string, pub *broker.Publication, sp broker.StreamPosition, delta bool, prev *broker.Publication) error {
	fmt.Printf("deliver %s offset %d: %s\n", ch, pub.Offset, pub.Data)
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
	b.Publish("chat:index", []byte(`{"text":"again"}`), opts)

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
	// deliver chat:index offset 1: {"text":"hello"}
	// deliver chat:index offset 2: {"text":"again"}
	// recovered offset 2: {"text":"again"}
	// top offset 2 same epoch true
}
