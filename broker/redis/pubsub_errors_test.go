package redis

import (
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// pubsubErrors counts what Config.OnPubSubError is told, by kind.
type pubsubErrors struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *pubsubErrors) add(kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n[kind]++
}

func (p *pubsubErrors) get(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[kind]
}

// TestOnPubSubError: a SUBSCRIBE that Redis refuses is reported as
// subscribe_channel, a message on a channel's pub/sub that does not
// decode as handle_client_message, and a stopped Redis as a lost
// connection and then as each failed attempt to bring it back.
func TestOnPubSubError(t *testing.T) {
	srv := redistest.Start(t)
	// A user that may use the control channel, the group channels and
	// chat's, no other.
	if _, err := srv.Cli("ACL", "SETUSER", "limited", "on", ">pw", "~*", "+@all", "resetchannels", "&gyretest.control", "&gyretest.g.*", "&gyretest.c.chat"); err != nil {
		t.Fatal(err)
	}
	errs := &pubsubErrors{n: map[string]int{}}
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, User: "limited", Password: "pw", IOTimeout: time.Second, OnPubSubError: errs.add})
	if err := b.Subscribe("chat"); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if n := errs.get("connection") + errs.get("subscribe_channel"); n != 0 {
		t.Fatalf("%d errors reported by a healthy Redis", n)
	}
	if err := b.Subscribe("secret"); err == nil {
		t.Fatal("Subscribe to a channel the user may not use succeeded")
	}
	if n := errs.get("subscribe_channel"); n != 1 {
		t.Fatalf("subscribe_channel reported %d times, want 1", n)
	}
	if _, err := srv.Cli("publish", b.shard("chat").pubsubName("chat"), "not protobuf"); err != nil {
		t.Fatal(err)
	}
	waitLost(t, ev, "chat")
	if n := errs.get("handle_client_message"); n != 1 {
		t.Fatalf("handle_client_message reported %d times, want 1", n)
	}
	srv.Stop()
	eventually(t, "the lost connection and failed attempts reported", func() bool { return errs.get("connection") >= 3 })
}
