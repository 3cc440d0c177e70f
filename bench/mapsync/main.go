// Command mapsync measures a map_clients channel from the outside, over
// the JSON client protocol, as the SDK drives it:
//
//   - the full sync of new observers: state pages of --limit entries
//     (SubscribeRequest type 2, phase 2, cursor/limit), then the stream
//     phase if the server asks for it, until the live reply (phase 0); the
//     time, pages, entries, frames and bytes of each, and the CPU time the
//     processes named by --pid spent meanwhile (/proc/PID/stat);
//   - then, with every observer live, one member joining the stream
//     channel --join-channel and leaving it: the frames and bytes each
//     observer receives for each, which must be one publication each (the
//     member's key, then its removal) and no state sent again.
//
// With --fanout map|stream it measures instead the fan-out of API
// publications to --fanout-subs subscribers of one channel, map or stream,
// and the CPU time per delivery of the processes of --pid.
//
// It is the measuring half of scripts/bench-map-presence, which holds the
// members with `gyre bench idle`; see docs/benchmarks.md, "Map
// subscriptions".
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/internal/proccpu"
)

type options struct {
	url         string
	secret      string
	channel     string
	joinURL     string
	joinChannel string
	limit       int
	observers   int
	settle      time.Duration
	baseline    time.Duration
	pids        proccpu.PIDList
	fanout      fanoutOptions
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "ws://127.0.0.1:8000/connection/websocket", "WebSocket endpoint the observers connect to")
	flag.StringVar(&o.secret, "hmac-secret", "bench-secret", "HS256 secret the connection tokens are signed with")
	flag.StringVar(&o.channel, "channel", "clients:room:big-idle-0", "map_clients channel to observe")
	flag.StringVar(&o.joinURL, "join-url", "", "WebSocket endpoint the joining member connects to (default --url)")
	flag.StringVar(&o.joinChannel, "join-channel", "room:big-idle-0", "stream channel the member joins and leaves")
	flag.IntVar(&o.limit, "limit", 1000, "state page size")
	flag.IntVar(&o.observers, "observers", 3, "observers, synced one after another and then kept live")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "how long to count what arrives after the join and after the leave")
	flag.DurationVar(&o.baseline, "baseline", 10*time.Second, "how long to read the processes' CPU time at rest first, to tell it from a sync's")
	flag.Var(&o.pids, "pid", "NAME=PID of a process whose CPU time to report (repeatable)")
	flag.StringVar(&o.fanout.kind, "fanout", "", "instead: measure a fan-out, of map changes (map) or stream publications (stream)")
	flag.IntVar(&o.fanout.subs, "fanout-subs", 1000, "fan-out: subscribers of --fanout-channel")
	flag.IntVar(&o.fanout.pubs, "fanout-pubs", 1000, "fan-out: publications, one API request each")
	flag.StringVar(&o.fanout.channel, "fanout-channel", "", "fan-out: the channel (a map namespace's for map)")
	flag.StringVar(&o.fanout.api, "api", "http://127.0.0.1:8000/api", "fan-out: the server API's base URL")
	flag.StringVar(&o.fanout.apiKey, "api-key", "bench-key", "fan-out: the server API's key")
	verbose := flag.Bool("v", false, "log the live replies' positions and every message a live observer receives")
	flag.Parse()
	if *verbose {
		slog.SetLogLoggerLevel(slog.LevelDebug)
	}
	if o.joinURL == "" {
		o.joinURL = o.url
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	do := run
	if o.fanout.kind != "" {
		do = runFanout
	}
	if err := do(ctx, o); err != nil {
		slog.Error("mapsync", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if len(o.pids) > 0 && o.baseline > 0 {
		cpu0 := o.pids.Sample()
		time.Sleep(o.baseline)
		for _, d := range o.pids.Since(cpu0) {
			fmt.Printf("at rest       cpu %-8s %.2fs in %s (%.0f%% of a core)\n", d.Name, d.Seconds, o.baseline, 100*d.Seconds/o.baseline.Seconds())
		}
	}
	var watchers clients
	defer watchers.close()
	for i := range o.observers {
		c, err := watchers.dial(ctx, o.url, o.secret, "observer-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		cpu0 := o.pids.Sample()
		s, err := c.sync(o.channel, typeClients, o.limit)
		if err != nil {
			return fmt.Errorf("observer %d: %w", i, err)
		}
		printSync(i, s, o.pids.Since(cpu0))
	}
	for _, w := range watchers {
		w.listen()
	}
	// What arrives before anyone joins is background (pings), not the
	// join's cost.
	background := countFor(watchers, o.settle)
	fmt.Printf("before join   %s\n", background)
	m, err := dial(ctx, o.joinURL, o.secret, "joiner")
	if err != nil {
		return err
	}
	defer m.close()
	if err := m.subscribeStream(o.joinChannel); err != nil {
		return err
	}
	fmt.Printf("joined        member client %s\n", m.clientID)
	fmt.Printf("after join    %s\n", countFor(watchers, o.settle))
	if err := m.unsubscribe(o.joinChannel); err != nil {
		return err
	}
	fmt.Printf("after leave   %s\n", countFor(watchers, o.settle))
	return nil
}

func printSync(i int, s syncStats, cpu []proccpu.Delta) {
	fmt.Printf("observer %d    synced %d entries in %d state pages + %d stream pages, %.3fs; %d frames, %s received (%.1f B per entry)\n",
		i, s.entries, s.statePages, s.streamPages, s.took.Seconds(), s.frames, mib(s.bytes), float64(s.bytes)/float64(max(s.entries, 1)))
	for _, d := range cpu {
		fmt.Printf("              cpu %-8s %.2fs (%.0f%% of a core)\n", d.Name, d.Seconds, 100*d.Seconds/s.took.Seconds())
	}
}

func mib(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}

// countFor waits d and reports what each watcher received since the last
// count (or since it listens), which may have started arriving before the
// call: the action counted comes first.
func countFor(ws []*client, d time.Duration) string {
	time.Sleep(d)
	var parts []string
	for i, w := range ws {
		parts = append(parts, fmt.Sprintf("\n  observer %d: %s", i, w.swap()))
	}
	return strings.Join(parts, "")
}

// client is one WebSocket connection speaking the JSON protocol.
type client struct {
	conn     io.ReadWriteCloser
	rd       io.Reader
	clientID string
	nextID   uint32
	// mu guards counts, what arrived since the last swap once listening.
	mu     sync.Mutex
	counts tally
}

func dial(ctx context.Context, url, secret, user string) (*client, error) {
	conn, br, _, err := ws.Dial(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c := &client{conn: conn, rd: conn}
	if br != nil {
		c.rd = br
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": user, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		return nil, fmt.Errorf("sign token: %w", err)
	}
	r, _, err := c.call(map[string]any{"connect": map[string]any{"token": tok, "name": "mapsync"}})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	c.clientID = r.Connect.Client
	return c, nil
}

func (c *client) close() { _ = c.conn.Close() }

// clients are connections closed together.
type clients []*client

func (cs *clients) dial(ctx context.Context, url, secret, user string) (*client, error) {
	c, err := dial(ctx, url, secret, user)
	if err == nil {
		*cs = append(*cs, c)
	}
	return c, err
}

func (cs clients) close() {
	for _, c := range cs {
		c.close()
	}
}

type pub struct {
	Key     string          `json:"key"`
	Removed bool            `json:"removed"`
	Offset  uint64          `json:"offset"`
	Data    json.RawMessage `json:"data"`
}

type subscribeResult struct {
	Type         int32  `json:"type"`
	Phase        int32  `json:"phase"`
	Cursor       string `json:"cursor"`
	Epoch        string `json:"epoch"`
	Offset       uint64 `json:"offset"`
	State        []pub  `json:"state"`
	Publications []pub  `json:"publications"`
}

type reply struct {
	ID    uint32 `json:"id"`
	Error *struct {
		Code    uint32 `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Connect *struct {
		Client string `json:"client"`
	} `json:"connect"`
	Subscribe *subscribeResult `json:"subscribe"`
	Push      *struct {
		Channel string          `json:"channel"`
		Pub     *pub            `json:"pub"`
		Other   json.RawMessage `json:"unsubscribe"`
	} `json:"push"`
}

// read returns the next data message, answering the server's pings
// (empty JSON objects) on the way; frames and bytes count every data
// message read.
func (c *client) read() ([]byte, error) {
	msg, _, err := wsutil.ReadServerData(struct {
		io.Reader
		io.Writer
	}{c.rd, c.conn})
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return msg, nil
}

func (c *client) write(cmd map[string]any) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := wsutil.WriteClientText(c.conn, b); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// call sends cmd with the next id and waits for its reply; it returns the
// data messages read (frames) and their bytes with it.
func (c *client) call(cmd map[string]any) (reply, frameCount, error) {
	c.nextID++
	cmd["id"] = c.nextID
	if err := c.write(cmd); err != nil {
		return reply{}, frameCount{}, err
	}
	var fc frameCount
	for {
		msg, err := c.read()
		if err != nil {
			return reply{}, fc, err
		}
		fc.frames++
		fc.bytes += int64(len(msg))
		for _, line := range bytes.Split(bytes.TrimSpace(msg), []byte("\n")) {
			if string(line) == "{}" {
				if err := c.write(map[string]any{}); err != nil {
					return reply{}, fc, err
				}
				continue
			}
			var r reply
			if err := json.Unmarshal(line, &r); err != nil {
				return reply{}, fc, fmt.Errorf("decode %q: %w", trunc(line), err)
			}
			if r.ID != c.nextID {
				continue
			}
			if r.Error != nil {
				return r, fc, fmt.Errorf("error %d: %s", r.Error.Code, r.Error.Message)
			}
			return r, fc, nil
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

type frameCount struct {
	frames int
	bytes  int64
}

type syncStats struct {
	entries, statePages, streamPages, frames int
	bytes                                    int64
	took                                     time.Duration
}

const (
	phaseLive   = 0
	phaseStream = 1
	phaseState  = 2
	typeMap     = 1
	typeClients = 2
	flagCompact = 1
)

// sync subscribes to a map_clients channel the way the SDK does: state
// pages while the reply has a cursor, the stream phase from the first
// page's position if the server does not go live on the last page.
func (c *client) sync(channel string, typ, limit int) (syncStats, error) {
	var s syncStats
	start := time.Now()
	req := map[string]any{"channel": channel, "type": typ, "phase": phaseState, "limit": limit, "flag": flagCompact}
	var epoch string
	var offset uint64
	for {
		r, fc, err := c.call(map[string]any{"subscribe": req})
		s.frames += fc.frames
		s.bytes += fc.bytes
		if err != nil {
			return s, err
		}
		res := r.Subscribe
		s.entries += len(res.State)
		switch {
		case req["phase"] == phaseState:
			s.statePages++
		default:
			s.streamPages++
		}
		if res.Phase == phaseLive {
			slog.Debug("live", "channel", channel, "epoch", res.Epoch, "offset", res.Offset, "publications", len(res.Publications))
			s.took = time.Since(start)
			return s, nil
		}
		if epoch == "" {
			epoch, offset = res.Epoch, res.Offset
		}
		req = map[string]any{"channel": channel, "type": typ, "limit": limit, "flag": flagCompact, "epoch": epoch}
		switch {
		case res.Phase == phaseState && res.Cursor != "":
			req["phase"] = phaseState
			req["cursor"] = res.Cursor
			req["offset"] = offset
		case res.Phase == phaseState || res.Phase == phaseStream:
			req["phase"] = phaseStream
			if res.Phase == phaseStream {
				offset = res.Offset
			}
			req["offset"] = offset
		default:
			return s, fmt.Errorf("unexpected phase %d", res.Phase)
		}
	}
}

func (c *client) subscribeStream(channel string) error {
	_, _, err := c.call(map[string]any{"subscribe": map[string]any{"channel": channel}})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", channel, err)
	}
	return nil
}

func (c *client) unsubscribe(channel string) error {
	_, _, err := c.call(map[string]any{"unsubscribe": map[string]any{"channel": channel}})
	if err != nil {
		return fmt.Errorf("unsubscribe %s: %w", channel, err)
	}
	return nil
}

// tally is what a live observer received: data frames and their bytes,
// pings apart, and the publications by kind; other counts any other
// message (an unsubscribe asking for a new sync would be one).
type tally struct {
	frames, pings, updates, removals, other int
	bytes                                   int64
	keys                                    []string
}

func (t tally) String() string {
	return fmt.Sprintf("%d frames, %d B: %d updates, %d removals, keys %v, %d pings, %d other",
		t.frames, t.bytes, t.updates, t.removals, t.keys, t.pings, t.other)
}

// listen reads in the background from now on, counting what arrives.
func (c *client) listen() {
	go func() {
		for {
			m, err := c.read()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					slog.Debug("observer read", "err", err)
				}
				return
			}
			slog.Debug("received", "client", c.clientID, "message", trunc(m))
			c.mu.Lock()
			c.counts.add(c, m)
			c.mu.Unlock()
		}
	}()
}

// swap returns what arrived since the last swap and starts counting anew.
func (c *client) swap() tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.counts
	c.counts = tally{}
	return t
}

func (t *tally) add(c *client, msg []byte) {
	t.frames++
	t.bytes += int64(len(msg))
	for _, line := range bytes.Split(bytes.TrimSpace(msg), []byte("\n")) {
		if string(line) == "{}" {
			t.pings++
			_ = c.write(map[string]any{})
			continue
		}
		var r reply
		if err := json.Unmarshal(line, &r); err != nil || r.Push == nil || r.Push.Pub == nil {
			t.other++
			continue
		}
		if r.Push.Pub.Removed {
			t.removals++
		} else {
			t.updates++
		}
		t.keys = append(t.keys, r.Push.Pub.Key)
	}
}
