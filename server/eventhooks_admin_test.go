package server

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// adminHooks is the event_hooks route's reply, the parts looked at.
type adminHooks struct {
	Hooks []struct {
		Name       string   `json:"name"`
		Kinds      []string `json:"kinds"`
		Namespaces []string `json:"namespaces"`
		Length     int      `json:"queue_length"`
		Delivered  uint64   `json:"delivered"`
		Failed     uint64   `json:"failed_requests"`
		Dropped    uint64   `json:"dropped"`
		Recent     []struct {
			Outcome string `json:"outcome"`
			ID      string `json:"event_id"`
			Channel string `json:"channel"`
			User    string `json:"user"`
			Type    string `json:"type"`
			Batch   int    `json:"batch"`
			Attempt int    `json:"attempt"`
			Reason  string `json:"reason"`
		} `json:"recent"`
	} `json:"event_hooks"`
}

// TestAdminEventHooks: the admin interface reports the server's hook
// queues: the default state proxy (HTTP, down for its first two
// requests) with its failures and then its delivery, and the named gRPC
// proxy that carries both a namespace's state events and the user status
// events. A server without event hooks reports none.
func TestAdminEventHooks(t *testing.T) {
	t.Parallel()
	b := newHookBackend(t, 2)
	c := hooksConfig(b)
	c.Admin.Enabled, c.Admin.Insecure = true, true
	_, base := newServer(t, c)

	cl := dialConnect(t, base, "u1")
	cl.subscribe("room:1")
	cl.subscribe("lobby:1")
	b.waitFor(t, "room:1", "occupied")
	b.waitFor(t, "lobby:1", "occupied")
	b.waitFor(t, "u1", "online")

	// The counts follow the backend's answers: wait for them to be in.
	var got adminHooks
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := get(t, base+"/admin/event_hooks")
		if status != 200 {
			t.Fatalf("event_hooks: %d %s", status, body)
		}
		got = adminHooks{}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("event_hooks: %v: %s", err, body)
		}
		if len(got.Hooks) == 2 && got.Hooks[0].Delivered == 1 && got.Hooks[1].Delivered == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event_hooks never showed the deliveries: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	state, named := got.Hooks[0], got.Hooks[1]
	if state.Name != "channel.proxy.state" || !slices.Equal(state.Kinds, []string{"channel"}) || !slices.Equal(state.Namespaces, []string{"room"}) {
		t.Fatalf("default state proxy: %+v", state)
	}
	if state.Failed != 2 || state.Dropped != 0 || state.Length != 0 || len(state.Recent) != 3 {
		t.Fatalf("default state proxy's counts: %+v", state)
	}
	// Newest first: the delivery, then the two failures of its batch.
	r := state.Recent
	if r[0].Outcome != "delivered" || r[0].Channel != "room:1" || r[0].Type != "occupied" || r[0].ID == "" {
		t.Fatalf("delivery: %+v", r[0])
	}
	for i, f := range r[1:] {
		if f.Outcome != "failed" || f.ID != r[0].ID || f.Batch != 1 || f.Attempt != 2-i || f.Reason != "status" {
			t.Fatalf("failure %d: %+v", i, f)
		}
	}

	if named.Name != "grpc-hooks" || !slices.Equal(named.Kinds, []string{"channel", "user"}) || !slices.Equal(named.Namespaces, []string{"lobby"}) {
		t.Fatalf("named proxy: %+v", named)
	}
	if named.Failed != 0 || len(named.Recent) != 2 {
		t.Fatalf("named proxy's counts: %+v", named)
	}
	var seen []string
	for _, rec := range named.Recent {
		seen = append(seen, rec.Channel+rec.User+" "+rec.Type)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"lobby:1 occupied", "u1 online"}) {
		t.Fatalf("named proxy's events: %v", seen)
	}

	plain := testConfig()
	plain.Admin.Enabled, plain.Admin.Insecure = true, true
	_, base = newServer(t, plain)
	status, body := get(t, base+"/admin/event_hooks")
	var none map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &none); status != 200 || err != nil || string(none["event_hooks"]) != "[]" {
		t.Fatalf("without event hooks: %d %s", status, body)
	}
}
