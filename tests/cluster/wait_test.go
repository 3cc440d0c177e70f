package cluster_test

import (
	"testing"
	"time"
)

// eventually polls cond until it is true, failing the test after limit;
// for state that only the API can show (info, presence).
func eventually(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
