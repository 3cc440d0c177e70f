package sharedpoll_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/sharedpoll"
)

// BenchmarkVerify checks one signature of a typical batch (ten keys); the
// server verifies one per batch a client tracks.
//
//	go test ./sharedpoll -run '^$' -bench Verify -benchmem
func BenchmarkVerify(b *testing.B) {
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = "instrument-" + strconv.Itoa(i)
	}
	sig := sharedpoll.Sign("secret", 1000, 0, "user-42", "prices:eu", keys)
	now := time.Unix(2000, 0)
	for _, bc := range []struct {
		name string
		v    *sharedpoll.Verifier
	}{
		{"current", sharedpoll.NewVerifier("secret", "", 0)},
		{"previous", sharedpoll.NewVerifier("next", "secret", 0)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.v.Verify(sig, "user-42", "prices:eu", keys, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
