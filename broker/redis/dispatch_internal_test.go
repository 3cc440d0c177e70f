package redis

import (
	"bytes"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/gyrehq/gyre/protocol"
)

// runRecorder keeps the runs a dispatcher hands over.
type runRecorder struct {
	broker.EventHandler
	pubs []*broker.Publication
}

func (r *runRecorder) HandleRuns(runs []broker.Run) error {
	for _, run := range runs {
		for _, rp := range run.Pubs {
			r.pubs = append(r.pubs, rp.Pub)
		}
	}
	return nil
}

// TestDispatcherReusesNothingHandedOn: the dispatcher decodes every
// message into one reused message value; what it hands on (payloads,
// traces, epochs) stays as it was when later messages, longer or shorter
// or without those fields, are decoded into the same value.
func TestDispatcherReusesNothingHandedOn(t *testing.T) {
	rec := &runRecorder{}
	d := &dispatcher{s: &subShard{b: &Broker{handler: rec}, prefix: "p."}}
	type sent struct {
		data, trace []byte
		offset      uint64
		epoch       string
	}
	want := []sent{
		{data: []byte(`{"first":"` + string(bytes.Repeat([]byte("x"), 300)) + `"}`), trace: []byte("trace-one"), offset: 7, epoch: "e1"},
		{data: []byte(`{"b":2}`)},
		{data: []byte(`{"c":3}`), trace: []byte("t3"), offset: 9, epoch: "e2"},
		{data: []byte(`{"d":"` + string(bytes.Repeat([]byte("y"), 500)) + `"}`), trace: bytes.Repeat([]byte("z"), 40)},
	}
	var events []event
	for _, w := range want {
		pub, err := (&protocol.Publication{Data: w.data}).MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		msg, err := (&wirepb.Message{Type: wirepb.Message_PUBLICATION, Publication: pub, Offset: w.offset, Epoch: w.epoch, Trace: w.trace}).MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, event{name: "p.chan", payload: string(msg)})
	}
	for _, ev := range events {
		// One at a time, so that each run is handed over before the next
		// message is decoded into the same value.
		d.dispatch([]event{ev})
	}
	if len(rec.pubs) != len(want) {
		t.Fatalf("%d publications handed over, want %d", len(rec.pubs), len(want))
	}
	for i, w := range want {
		p := rec.pubs[i]
		if !bytes.Equal(p.Data, w.data) || !bytes.Equal(p.Trace, w.trace) || p.Offset != w.offset {
			t.Errorf("publication %d: data %.20q, trace %q, offset %d; want %.20q, %q, %d", i, p.Data, p.Trace, p.Offset, w.data, w.trace, w.offset)
		}
	}
}
