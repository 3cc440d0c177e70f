package admin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/admin"
)

type nodesReply struct {
	Nodes []struct {
		ID            string  `json:"id"`
		Name          string  `json:"name"`
		Version       string  `json:"version"`
		UptimeSeconds int64   `json:"uptime_seconds"`
		NumClients    int     `json:"num_clients"`
		NumUsers      int     `json:"num_users"`
		NumSubs       int     `json:"num_subs"`
		NumChannels   int     `json:"num_channels"`
		PublishRate   float64 `json:"publish_rate"`
		MemoryBytes   uint64  `json:"memory_bytes"`
		BrokerHealthy bool    `json:"broker_healthy"`
		BrokerError   string  `json:"broker_error"`
	} `json:"nodes"`
}

// TestNodes: two nodes sharing an engine are both listed, with what each
// announced (node-b announces itself when it starts, after node-a).
func TestNodes(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		a := newNode(t, eng.Same(t, nodeConfig("node-a"), "nodes"))
		e := newEnvOn(t, a, admin.Config{})
		tok := e.token()
		openTail(t, e, "news", tok) // one subscription on node-a
		b := newNode(t, eng.Same(t, nodeConfig("node-b"), "nodes"))
		var got nodesReply
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := e.get("/admin/nodes", tok)
			if r.status != 200 {
				t.Fatalf("nodes: %d %s", r.status, r.body)
			}
			mustJSON(t, r.body, &got)
			if len(got.Nodes) == 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(got.Nodes) != 2 || got.Nodes[0].Name != "node-a" || got.Nodes[1].Name != "node-b" {
			t.Fatalf("nodes: %+v", got.Nodes)
		}
		for _, n := range got.Nodes {
			if n.ID == "" || n.Version != "test-version" || !n.BrokerHealthy || n.BrokerError != "" || n.MemoryBytes == 0 || n.PublishRate < 0 {
				t.Errorf("node %+v", n)
			}
		}
		if got.Nodes[0].NumSubs != 1 || got.Nodes[0].NumChannels != 1 {
			t.Errorf("node-a: %+v", got.Nodes[0])
		}

		// The API's channels lists those of both nodes.
		if _, err := b.Tail(t.Context(), "chat:b", func(string, *gyre.Publication) {}); err != nil {
			t.Fatal(err)
		}
		r := e.postJSON("/admin/api", tok, `{"method":"channels","params":{}}`)
		if r.status != 200 || !strings.Contains(r.body, `"news":{"num_clients":1}`) || !strings.Contains(r.body, `"chat:b":{"num_clients":1}`) {
			t.Fatalf("channels of the cluster: %d %s", r.status, r.body)
		}
	})
}
