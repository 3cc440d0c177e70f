// Command hookbackend is the application backend of the event hook
// benchmark (scripts/bench-hooks): it takes every request of the event
// hooks, checks its signature when given a secret, counts requests and
// events by type, and prints the counts when it gets SIGTERM or SIGINT.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/gyrehq/gyre/server/hooks"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18900", "address to listen on")
	secret := flag.String("secret", "", "HMAC secret of the signatures; empty checks none")
	flag.Parse()

	var (
		mu       sync.Mutex
		requests int
		bad      int
		byType   = map[string]int{}
		first    time.Time
		last     time.Time
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if *secret != "" {
			if err := hooks.VerifySignature(r.Header.Get(hooks.SignatureHeader), body, []byte(*secret), time.Now(), 5*time.Minute); err != nil {
				mu.Lock()
				bad++
				mu.Unlock()
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
		}
		var req struct {
			Events []struct {
				Type string `json:"type"`
			} `json:"events"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		now := time.Now()
		mu.Lock()
		requests++
		if first.IsZero() {
			first = now
		}
		last = now
		for _, e := range req.Events {
			byType[e.Type]++
		}
		mu.Unlock()
		_, _ = w.Write([]byte(`{}`))
	})
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	events := 0
	for _, n := range byType {
		events += n
	}
	span := last.Sub(first).Seconds()
	perSec := func(n int) float64 {
		if span <= 0 {
			return 0
		}
		return float64(n) / span
	}
	fmt.Printf("backend  %d requests (%.0f/s), %d events (%.0f/s), %.1f events per request, %d bad signatures\n",
		requests, perSec(requests), events, perSec(events), float64(events)/max(float64(requests), 1), bad)
	fmt.Printf("events   occupied %d, vacated %d, online %d, offline %d (over %.1fs)\n",
		byType["occupied"], byType["vacated"], byType["online"], byType["offline"], span)
}
