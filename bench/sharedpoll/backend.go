package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// backend is the refresh proxy: keys k0 … k<n-1>, each with a version
// (from 1) and the time of its last change.
type backend struct {
	channel string
	size    int
	tick    time.Duration

	mu       sync.RWMutex
	versions []uint64
	changed  []int64 // Unix ms of each key's last change
	fraction float64
	changes  uint64 // key changes in all

	requests, keysAsked, answered, bad atomic.Uint64
	perKey                             []atomic.Uint32
	nodesMu                            sync.Mutex
	nodes                              map[string]*nodeCount
}

type nodeCount struct {
	Requests uint64 `json:"requests"`
	Keys     uint64 `json:"keys"`
}

// backendStats is what GET /stats answers: counts since the start.
type backendStats struct {
	Time     int64                `json:"time_ms"`
	Keys     int                  `json:"keys"`
	Fraction float64              `json:"change_fraction"`
	Changes  uint64               `json:"changes"`
	Requests uint64               `json:"requests"`
	Asked    uint64               `json:"keys_asked"`
	Answered uint64               `json:"items_answered"`
	Bad      uint64               `json:"bad_requests"`
	Nodes    map[string]nodeCount `json:"nodes"`
	PerKey   []uint32             `json:"per_key,omitempty"`
}

func runBackend(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("backend", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18290", "address to listen on")
	keys := fs.Int("keys", 20000, "keys k0 … k<keys-1>")
	fraction := fs.Float64("change", 0.01, "fraction of the keys that get a new version each --tick (POST /change?fraction=F changes it)")
	tick := fs.Duration("tick", time.Second, "how often keys change")
	size := fs.Int("size", 64, "bytes of JSON of each value (about; at least the version and the time)")
	channel := fs.String("channel", "poll:board", "the shared-poll channel polled")
	quiet := fs.Bool("quiet", false, "no line per second on stdout")
	_ = fs.Parse(args)

	b := &backend{
		channel: *channel, size: *size, tick: *tick, fraction: *fraction,
		versions: make([]uint64, *keys), changed: make([]int64, *keys),
		perKey: make([]atomic.Uint32, *keys), nodes: make(map[string]*nodeCount),
	}
	now := time.Now().UnixMilli()
	for i := range b.versions {
		b.versions[i], b.changed[i] = 1, now
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /refresh", b.refresh)
	mux.HandleFunc("GET /stats", b.stats)
	mux.HandleFunc("POST /change", b.setFraction)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go b.changeLoop(ctx)
	if !*quiet {
		go b.report(ctx)
	}
	fmt.Printf("backend       %d keys on http://%s/refresh, %.2f%% changed each %s\n", *keys, *addr, 100**fraction, *tick)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// changeLoop gives a new version to fraction of the keys, drawn at
// random, each tick: in ten steps spread over the tick, so that changes
// fall at every phase of the server's refresh cycle.
func (b *backend) changeLoop(ctx context.Context) {
	const steps = 10
	t := time.NewTicker(b.tick / steps)
	defer t.Stop()
	var owed float64 // changes due, carried between steps
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now().UnixMilli()
		b.mu.Lock()
		owed += b.fraction * float64(len(b.versions)) / steps
		n := min(int(owed), len(b.versions))
		owed -= float64(n)
		picked := make(map[int]struct{}, n)
		for len(picked) < n {
			picked[rand.IntN(len(b.versions))] = struct{}{}
		}
		for i := range picked {
			b.versions[i]++
			b.changed[i] = now
		}
		b.changes += uint64(len(picked))
		b.mu.Unlock()
	}
}

// report prints the counts of each second.
func (b *backend) report(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last backendStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := b.snapshot(false)
		fmt.Printf("%s requests %d keys %d answered %d changes %d bad %d\n", time.Now().Format("15:04:05"),
			s.Requests-last.Requests, s.Asked-last.Asked, s.Answered-last.Answered, s.Changes-last.Changes, s.Bad-last.Bad)
		last = s
	}
}

type refreshRequest struct {
	Channel string `json:"channel"`
	Items   []struct {
		Key     string `json:"key"`
		Version uint64 `json:"version"`
	} `json:"items"`
}

// refresh answers a poll: the keys asked whose version is newer than the
// one asked (all of them when asked with no version).
func (b *backend) refresh(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req refreshRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err == nil && req.Channel != b.channel {
		err = fmt.Errorf("channel %q, want %q", req.Channel, b.channel)
	}
	if err != nil {
		b.bad.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.requests.Add(1)
	b.keysAsked.Add(uint64(len(req.Items)))
	node := r.Header.Get("X-Node")
	b.nodesMu.Lock()
	nc := b.nodes[node]
	if nc == nil {
		nc = &nodeCount{}
		b.nodes[node] = nc
	}
	nc.Requests++
	nc.Keys += uint64(len(req.Items))
	b.nodesMu.Unlock()

	out := make([]byte, 0, 64+len(req.Items)*(b.size+40))
	out = append(out, `{"result":{"items":[`...)
	n := 0
	pad := strings.Repeat("x", max(b.size-len(`{"v":1234,"t":1234567890123,"p":""}`), 0))
	b.mu.RLock()
	for _, it := range req.Items {
		i, ok := keyIndex(it.Key, len(b.versions))
		if !ok {
			continue
		}
		b.perKey[i].Add(1)
		v := b.versions[i]
		if v <= it.Version {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, `{"key":"`...)
		out = append(out, it.Key...)
		out = append(out, `","data":{"v":`...)
		out = strconv.AppendUint(out, v, 10)
		out = append(out, `,"t":`...)
		out = strconv.AppendInt(out, b.changed[i], 10)
		out = append(out, `,"p":"`...)
		out = append(out, pad...)
		out = append(out, `"},"version":`...)
		out = strconv.AppendUint(out, v, 10)
		out = append(out, '}')
	}
	b.mu.RUnlock()
	out = append(out, "]}}"...)
	b.answered.Add(uint64(n))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// keyIndex is the number of key "k<i>", if it is one of n keys.
func keyIndex(key string, n int) (int, bool) {
	if !strings.HasPrefix(key, "k") {
		return 0, false
	}
	i, err := strconv.Atoi(key[1:])
	return i, err == nil && i >= 0 && i < n
}

func (b *backend) snapshot(perKey bool) backendStats {
	b.mu.RLock()
	s := backendStats{Time: time.Now().UnixMilli(), Keys: len(b.versions), Fraction: b.fraction, Changes: b.changes}
	b.mu.RUnlock()
	s.Requests, s.Asked, s.Answered, s.Bad = b.requests.Load(), b.keysAsked.Load(), b.answered.Load(), b.bad.Load()
	b.nodesMu.Lock()
	s.Nodes = make(map[string]nodeCount, len(b.nodes))
	for k, v := range b.nodes {
		s.Nodes[k] = *v
	}
	b.nodesMu.Unlock()
	if perKey {
		s.PerKey = make([]uint32, len(b.perKey))
		for i := range b.perKey {
			s.PerKey[i] = b.perKey[i].Load()
		}
	}
	return s
}

func (b *backend) stats(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(b.snapshot(r.URL.Query().Get("per_key") != ""))
}

func (b *backend) setFraction(w http.ResponseWriter, r *http.Request) {
	f, err := strconv.ParseFloat(r.URL.Query().Get("fraction"), 64)
	if err != nil || f < 0 || f > 1 {
		http.Error(w, "want ?fraction= between 0 and 1", http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.fraction = f
	b.mu.Unlock()
	fmt.Fprintf(w, "{}\n")
}
