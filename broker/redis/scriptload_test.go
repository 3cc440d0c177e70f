package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestScriptsLoadedWithPubSub: the publish script is in Redis once the
// broker runs, and again once the pub/sub connection came back after
// Redis lost its scripts (as a restart loses them), so that concurrent
// first publishes do not meet NOSCRIPT.
func TestScriptsLoadedWithPubSub(t *testing.T) {
	srv := redistest.Start(t)
	runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second})
	loaded := func() bool {
		out, err := srv.Cli("SCRIPT", "EXISTS", publishScript.sha, mapExpireScript.sha)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(out, "1") == 2
	}
	if !loaded() {
		t.Fatal("publish script not loaded after Run")
	}
	if _, err := srv.Cli("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Cli("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !loaded() {
		if time.Now().After(deadline) {
			t.Fatal("publish script not loaded again after the pub/sub connection came back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
