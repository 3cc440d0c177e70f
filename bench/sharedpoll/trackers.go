package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/sharedpoll"
)

type trackerOptions struct {
	urls        []string
	conns       int
	first       int
	keyspace    int
	keysPerConn int
	stride      int
	channel     string
	tokenSecret string
	pollSecret  string
	insecure    bool
	sigTTL      time.Duration
	duration    time.Duration
	concurrency int
	retries     int
	statsAddr   string
}

// lagBuckets: the lag from a value's change at the backend to its
// arrival, in buckets of lagStep up to lagMax, then one for the rest.
const (
	lagStep    = 10 // ms
	lagMax     = 10000
	lagBuckets = lagMax/lagStep + 1
)

// trackerStats are the counts of a trackers process since its start;
// GET /stats answers them as JSON.
type trackerStats struct {
	// What the process was asked for: the keys of connection g (first ≤
	// g < first+conns) are keysPerConn keys from (g*stride) mod keyspace.
	Conns       int `json:"conns"`
	First       int `json:"first"`
	Keyspace    int `json:"keyspace"`
	KeysPerConn int `json:"keys_per_conn"`
	Stride      int `json:"stride"`

	Connected    int64    `json:"connected"`    // connect replies
	Tracking     int64    `json:"tracking"`     // connections whose track reply came, and still open
	Complete     int64    `json:"complete"`     // of those, with a value for every key
	Closed       int64    `json:"closed"`       // connections lost after tracking
	Unsubscribed int64    `json:"unsubscribed"` // unsubscribe pushes from the server
	Failed       int64    `json:"failed"`       // connections given up (setup failed --retries times)
	Retried      int64    `json:"retried"`      // setup attempts that failed and were retried
	Errors       int64    `json:"errors"`       // every error above, and error replies
	ErrorSample  []string `json:"error_sample"` // the first few

	Initial     int64    `json:"initial"`              // first value of a key on a connection
	Updates     int64    `json:"updates"`              // later values (a newer version)
	FromReply   int64    `json:"from_reply"`           // values that came in the track reply
	Regressions int64    `json:"regressions"`          // a version below the one the connection has
	RegReply    int64    `json:"regressions_in_reply"` // of those, in a track reply (a push had a newer one)
	Repeats     int64    `json:"repeats"`              // the version the connection has, again
	Skipped     int64    `json:"skipped"`              // versions jumped over by an update (changes made between polls)
	Removed     int64    `json:"removed"`              // removals
	Frames      int64    `json:"frames"`
	Bytes       int64    `json:"bytes"`
	Lag         []int64  `json:"lag_ms_buckets"` // updates by lag, lagStep ms each
	Sample      []string `json:"regression_sample"`
}

// counters are trackerStats's live counts.
type counters struct {
	connected, tracking, complete, closed, unsubscribed, failed, retried, errors                 atomic.Int64
	initial, updates, fromReply, regressions, regReply, repeats, skipped, removed, frames, bytes atomic.Int64
	lag                                                                                          [lagBuckets]atomic.Int64

	mu          sync.Mutex
	errorSample []string
	regSample   []string
}

func (c *counters) fail(err error) {
	c.errors.Add(1)
	c.mu.Lock()
	if len(c.errorSample) < 10 {
		c.errorSample = append(c.errorSample, err.Error())
	}
	c.mu.Unlock()
}

func (c *counters) regression(s string) {
	c.regressions.Add(1)
	c.mu.Lock()
	if len(c.regSample) < 10 {
		c.regSample = append(c.regSample, s)
	}
	c.mu.Unlock()
}

func runTrackers(ctx context.Context, args []string) error {
	var o trackerOptions
	fs := flag.NewFlagSet("trackers", flag.ExitOnError)
	urls := fs.String("url", "ws://127.0.0.1:8000/connection/websocket", "WebSocket endpoints, comma-separated: connection g goes to the (g mod n)th")
	fs.IntVar(&o.conns, "conns", 1000, "connections")
	fs.IntVar(&o.first, "first", 0, "global number of the first connection (user u<first>, its keys), so that processes share the numbering")
	fs.IntVar(&o.keyspace, "keys", 20000, "keys k0 … k<keys-1> of the backend")
	fs.IntVar(&o.keysPerConn, "keys-per-conn", 100, "keys each connection tracks: a window from (g*stride) mod keys")
	fs.IntVar(&o.stride, "stride", 37, "distance between the windows of neighbouring connections")
	fs.StringVar(&o.channel, "channel", "poll:board", "shared-poll channel")
	fs.StringVar(&o.tokenSecret, "token-secret", "bench-secret", "HS256 secret of the connection tokens (user u<g>)")
	fs.BoolVar(&o.insecure, "insecure", false, "connect without a token (a server with client.insecure; the user is then \"\")")
	fs.StringVar(&o.pollSecret, "poll-secret", "poll-secret", "shared_poll.hmac_secret_key: the secret of the track signatures")
	fs.DurationVar(&o.sigTTL, "sig-ttl", 2*time.Hour, "track signatures expire this long after they are made (0: never)")
	fs.DurationVar(&o.duration, "duration", time.Hour, "how long to stay connected")
	fs.IntVar(&o.concurrency, "concurrency", 64, "connection set-ups in flight")
	fs.IntVar(&o.retries, "retries", 3, "set-up attempts of a connection before giving it up")
	fs.StringVar(&o.statsAddr, "stats", "", "address of the GET /stats endpoint (none when empty)")
	_ = fs.Parse(args)
	o.urls = strings.Split(*urls, ",")

	var c counters
	stats := func() trackerStats {
		s := trackerStats{
			Conns: o.conns, First: o.first, Keyspace: o.keyspace, KeysPerConn: o.keysPerConn, Stride: o.stride,
			Connected: c.connected.Load(), Tracking: c.tracking.Load(), Complete: c.complete.Load(), Closed: c.closed.Load(),
			Unsubscribed: c.unsubscribed.Load(), Failed: c.failed.Load(), Retried: c.retried.Load(), Errors: c.errors.Load(),
			Initial: c.initial.Load(), Updates: c.updates.Load(), FromReply: c.fromReply.Load(), Regressions: c.regressions.Load(), RegReply: c.regReply.Load(),
			Repeats: c.repeats.Load(), Skipped: c.skipped.Load(), Removed: c.removed.Load(), Frames: c.frames.Load(), Bytes: c.bytes.Load(),
			Lag: make([]int64, lagBuckets),
		}
		for i := range c.lag {
			s.Lag[i] = c.lag[i].Load()
		}
		c.mu.Lock()
		s.ErrorSample = append([]string(nil), c.errorSample...)
		s.Sample = append([]string(nil), c.regSample...)
		c.mu.Unlock()
		return s
	}
	if o.statsAddr != "" {
		ln, err := net.Listen("tcp", o.statsAddr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(stats())
		}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	sem := make(chan struct{}, o.concurrency)
	start := time.Now()
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s := stats()
			fmt.Fprintf(os.Stderr, "%s trackers %d-%d: %d connected, %d tracking, %d complete, %d closed, %d failed; values %d initial + %d updates; %d errors\n",
				time.Now().Format("15:04:05"), o.first, o.first+o.conns-1, s.Connected, s.Tracking, s.Complete, s.Closed, s.Failed, s.Initial, s.Updates, s.Errors)
		}
	}()
	for i := range o.conns {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			t := newTracker(&o, &c, o.first+i)
			var err error
			for attempt := range o.retries {
				if err = t.setup(ctx); err == nil {
					break
				}
				if ctx.Err() != nil {
					break
				}
				if attempt+1 < o.retries {
					c.retried.Add(1)
					time.Sleep(time.Duration(attempt+1) * time.Second)
				}
			}
			<-sem
			if err != nil {
				if ctx.Err() == nil {
					c.failed.Add(1)
					c.fail(fmt.Errorf("connection %d: %w", t.g, err))
				}
				return
			}
			mu.Lock()
			conns = append(conns, t.conn)
			mu.Unlock()
			t.listen(ctx)
		})
	}
	fmt.Fprintf(os.Stderr, "%s trackers %d-%d: all set up in %.1fs\n", time.Now().Format("15:04:05"), o.first, o.first+o.conns-1, time.Since(start).Seconds())
	<-ctx.Done()
	mu.Lock()
	for _, cn := range conns {
		_ = cn.Close()
	}
	mu.Unlock()
	wg.Wait()
	b, _ := json.Marshal(stats())
	fmt.Printf("%s\n", b)
	return nil
}

// tracker is one connection: its keys are k<(start+j) mod keyspace> for
// j < keysPerConn, and have[j] is the version it has of key j.
type tracker struct {
	o        *trackerOptions
	c        *counters
	g        int
	start    int
	have     []uint64
	missing  int // keys without a value yet
	conn     net.Conn
	rd       io.Reader
	nextID   uint32
	tracking bool
}

func newTracker(o *trackerOptions, c *counters, g int) *tracker {
	return &tracker{o: o, c: c, g: g, start: (g * o.stride) % o.keyspace}
}

func (t *tracker) key(j int) string { return "k" + strconv.Itoa((t.start+j)%t.o.keyspace) }

// index is the j of key k, if the connection tracks it.
func (t *tracker) index(k string) (int, bool) {
	i, ok := keyIndex(k, t.o.keyspace)
	if !ok {
		return 0, false
	}
	j := (i - t.start + t.o.keyspace) % t.o.keyspace
	return j, j < t.o.keysPerConn
}

// setup connects, subscribes and tracks the keys; the values in the track
// reply are taken.
func (t *tracker) setup(ctx context.Context) error {
	t.have = make([]uint64, t.o.keysPerConn)
	t.missing = t.o.keysPerConn
	t.nextID = 0
	url := t.o.urls[t.g%len(t.o.urls)]
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, br, _, err := ws.Dial(dctx, url)
	if err != nil {
		return fmt.Errorf("dial %s: %w", url, err)
	}
	t.conn, t.rd = conn, conn
	if br != nil {
		t.rd = br
	}
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	user := "u" + strconv.Itoa(t.g)
	connect := map[string]any{"name": "sharedpoll"}
	if t.o.insecure {
		user = ""
	} else {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"sub": user, "exp": time.Now().Add(t.o.duration + time.Hour).Unix(),
		}).SignedString([]byte(t.o.tokenSecret))
		if err != nil {
			_ = conn.Close()
			return err
		}
		connect["token"] = tok
	}
	fail := func(err error) error {
		_ = conn.Close()
		return err
	}
	if _, err := t.call(map[string]any{"connect": connect}); err != nil {
		return fail(fmt.Errorf("connect: %w", err))
	}
	t.c.connected.Add(1)
	if _, err := t.call(map[string]any{"subscribe": map[string]any{"channel": t.o.channel, "type": 4}}); err != nil {
		t.c.connected.Add(-1)
		return fail(fmt.Errorf("subscribe: %w", err))
	}
	keys := make([]string, t.o.keysPerConn)
	items := make([]map[string]any, t.o.keysPerConn)
	for j := range keys {
		keys[j] = t.key(j)
		items[j] = map[string]any{"key": keys[j]}
	}
	iat := time.Now().Unix()
	exp := int64(0)
	if t.o.sigTTL > 0 {
		exp = iat + int64(t.o.sigTTL/time.Second)
	}
	sig := sharedpoll.Sign(t.o.pollSecret, iat, exp, user, t.o.channel, keys)
	r, err := t.call(map[string]any{"sub_refresh": map[string]any{
		"channel": t.o.channel, "type": 1,
		"track": []map[string]any{{"signature": sig, "items": items}},
	}})
	if err != nil {
		t.c.connected.Add(-1)
		return fail(fmt.Errorf("track: %w", err))
	}
	t.tracking = true
	t.c.tracking.Add(1)
	if t.missing == 0 {
		t.c.complete.Add(1)
	}
	_ = r
	_ = conn.SetDeadline(time.Time{})
	return nil
}

type wirePub struct {
	Key     string          `json:"key"`
	Data    json.RawMessage `json:"data"`
	Version uint64          `json:"version"`
	Removed bool            `json:"removed"`
}

type wireReply struct {
	ID    uint32 `json:"id"`
	Error *struct {
		Code    uint32 `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	SubRefresh *struct {
		Items []wirePub `json:"items"`
	} `json:"sub_refresh"`
	Push *struct {
		Channel     string   `json:"channel"`
		Pub         *wirePub `json:"pub"`
		Unsubscribe *struct {
			Code   uint32 `json:"code"`
			Reason string `json:"reason"`
		} `json:"unsubscribe"`
		Disconnect *struct {
			Code   uint32 `json:"code"`
			Reason string `json:"reason"`
		} `json:"disconnect"`
	} `json:"push"`
}

func (t *tracker) write(cmd map[string]any) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	return wsutil.WriteClientText(t.conn, b)
}

// call sends cmd with the next id and handles what arrives until its
// reply, which it returns.
func (t *tracker) call(cmd map[string]any) (wireReply, error) {
	t.nextID++
	cmd["id"] = t.nextID
	if err := t.write(cmd); err != nil {
		return wireReply{}, fmt.Errorf("write: %w", err)
	}
	for {
		msg, _, err := wsutil.ReadServerData(struct {
			io.Reader
			io.Writer
		}{t.rd, t.conn})
		if err != nil {
			return wireReply{}, fmt.Errorf("read: %w", err)
		}
		var got *wireReply
		if err := t.handle(msg, func(r *wireReply) { got = r }); err != nil {
			return wireReply{}, err
		}
		if got != nil {
			if got.Error != nil {
				return *got, fmt.Errorf("error %d: %s", got.Error.Code, got.Error.Message)
			}
			return *got, nil
		}
	}
}

// listen reads until the connection closes.
func (t *tracker) listen(ctx context.Context) {
	for {
		msg, _, err := wsutil.ReadServerData(struct {
			io.Reader
			io.Writer
		}{t.rd, t.conn})
		if err != nil {
			t.lost(ctx, err)
			return
		}
		if err := t.handle(msg, nil); err != nil {
			t.lost(ctx, err)
			_ = t.conn.Close()
			return
		}
	}
}

func (t *tracker) lost(ctx context.Context, err error) {
	if t.tracking {
		t.tracking = false
		t.c.tracking.Add(-1)
		if t.missing == 0 {
			t.c.complete.Add(-1)
		}
	}
	if ctx.Err() != nil {
		return
	}
	t.c.closed.Add(1)
	if !errors.Is(err, io.EOF) {
		t.c.fail(fmt.Errorf("connection %d: %w", t.g, err))
	} else {
		t.c.fail(fmt.Errorf("connection %d closed by the server", t.g))
	}
}

// handle takes one data message: pings are answered, values taken, the
// reply to the command in flight handed to reply.
func (t *tracker) handle(msg []byte, reply func(*wireReply)) error {
	t.c.frames.Add(1)
	t.c.bytes.Add(int64(len(msg)))
	for line := range bytes.SplitSeq(bytes.TrimSpace(msg), []byte("\n")) {
		if string(line) == "{}" {
			if err := wsutil.WriteClientText(t.conn, []byte("{}")); err != nil {
				return fmt.Errorf("pong: %w", err)
			}
			continue
		}
		var r wireReply
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("decode %q: %w", trunc(line), err)
		}
		switch {
		case r.ID != 0:
			if r.ID != t.nextID || reply == nil {
				t.c.fail(fmt.Errorf("connection %d: unexpected reply %q", t.g, trunc(line)))
				continue
			}
			if r.SubRefresh != nil {
				for i := range r.SubRefresh.Items {
					t.c.fromReply.Add(1)
					t.take(&r.SubRefresh.Items[i], "reply")
				}
			}
			reply(&r)
		case r.Push == nil:
		case r.Push.Pub != nil:
			if r.Push.Channel != t.o.channel {
				t.c.fail(fmt.Errorf("connection %d: push of channel %q", t.g, r.Push.Channel))
				continue
			}
			t.take(r.Push.Pub, "push")
		case r.Push.Unsubscribe != nil:
			t.c.unsubscribed.Add(1)
			return fmt.Errorf("unsubscribed by the server: %d %s", r.Push.Unsubscribe.Code, r.Push.Unsubscribe.Reason)
		case r.Push.Disconnect != nil:
			return fmt.Errorf("disconnected by the server: %d %s", r.Push.Disconnect.Code, r.Push.Disconnect.Reason)
		}
	}
	return nil
}

// take checks and counts one value of a key.
func (t *tracker) take(p *wirePub, from string) {
	j, ok := t.index(p.Key)
	if !ok {
		t.c.fail(fmt.Errorf("connection %d: value of key %q it does not track", t.g, p.Key))
		return
	}
	if p.Removed {
		t.c.removed.Add(1)
		return
	}
	have := t.have[j]
	switch {
	case p.Version < have:
		if from == "reply" {
			t.c.regReply.Add(1)
		}
		t.c.regression(fmt.Sprintf("connection %d key %s: had version %d, got %d (%s)", t.g, p.Key, have, p.Version, from))
		return
	case p.Version == have:
		t.c.repeats.Add(1)
		return
	}
	t.have[j] = p.Version
	if have == 0 {
		t.c.initial.Add(1)
		t.missing--
		if t.missing == 0 && t.tracking {
			t.c.complete.Add(1)
		}
		return
	}
	t.c.updates.Add(1)
	t.c.skipped.Add(int64(p.Version - have - 1))
	var d struct {
		T int64 `json:"t"`
	}
	if json.Unmarshal(p.Data, &d) == nil && d.T > 0 {
		lag := time.Now().UnixMilli() - d.T
		t.c.lag[min(max(lag, 0)/lagStep, lagBuckets-1)].Add(1)
	}
}

func trunc(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
