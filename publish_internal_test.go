package gyre

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// TestRunPositionSkipsUnstored: a subscriber given a run whose last
// publication was not stored (no offset) is still at the offset of the
// last one that was, as one publication at a time would leave it; else
// the position check would see a gap that is not there.
func TestRunPositionSkipsUnstored(t *testing.T) {
	n, err := NewNode(Config{Insecure: true, Channels: ChannelConfig{Namespaces: []Namespace{{
		Name:           "hist",
		ChannelOptions: ChannelOptions{HistorySize: 10, HistoryTTL: time.Minute, AllowSubscribeForClient: true},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(t.Context())
	c := n.NewClient(t.Context(), &stubTransport{})
	defer c.Close(nil)
	var msgs [][]byte
	for _, cmd := range []*protocol.Command{
		{Id: 1, Connect: &protocol.ConnectRequest{}},
		{Id: 2, Subscribe: &protocol.SubscribeRequest{Channel: "hist:run"}},
	} {
		m, err := protocol.AppendCommand(nil, protocol.TypeJSON, cmd)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if !c.HandleFrame(protocol.JoinFrame(nil, protocol.TypeJSON, msgs)) {
		t.Fatal("connect and subscribe refused")
	}
	var s *subscription
	for deadline := time.Now().Add(10 * time.Second); s == nil || !s.takesAll(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the subscription did not become active")
		}
		for sub := range n.hub.subscribers("hist:run").all() {
			s = sub
		}
	}
	items := []PublishItem{{Data: []byte(`1`)}, {Data: []byte(`2`)}, {Data: []byte(`3`), Options: PublishOptions{SkipHistory: true}}}
	for i := range items {
		items[i].Channel = "hist:run"
	}
	n.PublishMany(items)
	if got := s.offset.Load(); got != 2 {
		t.Fatalf("subscriber at offset %d after the run, want 2 (its last stored publication)", got)
	}
}
