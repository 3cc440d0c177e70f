// Package consume runs the server API commands that consumers read from
// external systems: a PostgreSQL outbox table (consume/pgoutbox), Kafka
// topics (consume/kafka), Redis streams (consume/redisstream) and a NATS
// JetStream stream (consume/jetstream).
//
// Each consumer reads messages in its source's order and hands them, a
// batch at a time, to its Dispatcher, which runs them through the API
// executor (server/api) in that order and tells the consumer how many are
// done. The guarantees are the same for every source:
//
//   - at least once: a message is acknowledged (committed, acked,
//     deleted) only once its command ran or was found impossible;
//   - a command that fails for a reason that may pass (100 internal
//     error: the broker down) is run again, with back-off, and the
//     messages after it wait, so that order holds per partition;
//   - a message that can never run (malformed, unknown method, a
//     channel the namespace refuses) is logged with its position in the
//     source, counted as skipped and acknowledged;
//   - a publish with an idempotency key is harmless when delivered
//     again (the broker answers it from its idempotency cache).
//
// Set runs the consumers of a server and reports their state for
// /health, the metrics and the admin API.
package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/server/api"
)

// Message is one message read from a source.
type Message struct {
	// Method names the API method of Payload, read from a header or a
	// field of the message; empty when Payload is {"method": ...,
	// "payload": ...} (or when Publication is set).
	Method  string
	Payload []byte
	// Publication, when set (publication data mode), publishes Payload as
	// it is into Publication.Channels instead of running a command.
	Publication *Publication
	// Position says where the message is in its source, for log lines:
	// "partition 3 offset 1881", "id 52", "stream s entry 1-0".
	Position string
	// Err, when set, is why the consumer could not read the message (a
	// header that is not a number, say): it is skipped as malformed.
	Err error

	// The rest is for the message's span, filled in only when the
	// dispatcher traces (Dispatcher.Traced).
	//
	// Destination is where the message was read: the topic, stream,
	// subject or table; Partition its partition there, "" where the
	// source has none.
	Destination, Partition string
	// TraceParent and TraceState are the W3C trace context the message
	// carries (a Kafka or JetStream header, a Redis stream field
	// traceparent and tracestate), "" for none: its span continues that
	// trace.
	TraceParent, TraceState string
}

// Publication is a message of publication data mode: the data to publish
// is Message.Payload, the rest comes from headers or fields.
type Publication struct {
	// Channels to publish into: one is a publish, several a broadcast.
	Channels       []string
	IdempotencyKey string
	Delta          bool
	Version        uint64
	VersionEpoch   string
	Tags           map[string]string
}

// ParsePublication reads a publication of publication data mode from the
// values a message carries, get returning the value of a header or field
// ("" when missing) and tags the tags. It fails on a value that is not
// what it must be (a version that is not a number).
func ParsePublication(channels, idempotencyKey, delta, version, versionEpoch string, tags map[string]string) (*Publication, error) {
	p := &Publication{IdempotencyKey: idempotencyKey, VersionEpoch: versionEpoch, Tags: tags}
	for ch := range strings.SplitSeq(channels, ",") {
		if ch = strings.TrimSpace(ch); ch != "" {
			p.Channels = append(p.Channels, ch)
		}
	}
	if len(p.Channels) == 0 {
		return nil, errors.New("no channels")
	}
	if delta != "" {
		d, err := strconv.ParseBool(delta)
		if err != nil {
			return nil, fmt.Errorf("delta %q is not true or false", delta)
		}
		p.Delta = d
	}
	if version != "" {
		v, err := strconv.ParseUint(version, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("version %q is not a number", version)
		}
		p.Version = v
	}
	return p, nil
}

// commands are the API commands of m.
func (m *Message) commands() []api.Command {
	switch {
	case m.Err != nil:
		return []api.Command{api.NewCommand("", nil)}
	case m.Publication != nil:
		p := m.Publication
		flags := api.PublishFlags{Tags: p.Tags, IdempotencyKey: p.IdempotencyKey, Delta: p.Delta, Version: p.Version, VersionEpoch: p.VersionEpoch}
		if len(p.Channels) == 1 {
			return []api.Command{api.NewCommand("publish", &api.PublishRequest{Channel: p.Channels[0], Data: api.Payload(m.Payload), PublishFlags: flags})}
		}
		return []api.Command{api.NewCommand("broadcast", &api.BroadcastRequest{Channels: p.Channels, Data: api.Payload(m.Payload), PublishFlags: flags})}
	case m.Method != "":
		return api.DecodeCommands(m.Method, m.Payload)
	default:
		return api.DecodeMethodPayload(m.Payload)
	}
}

// Dispatcher runs the messages of one consumer. It is safe for concurrent
// use by the consumer's partitions.
type Dispatcher struct {
	name  string
	typ   string
	exec  *api.Executor
	log   *slog.Logger
	fails *faillog.Log
	stats *Stats
	// backoff bounds the waits between runs of a command that failed for
	// a temporary reason.
	minBackoff, maxBackoff time.Duration
	// trace makes the messages' spans; its zero value traces nothing.
	trace tracing
}

// NewDispatcher makes the dispatcher of the consumer called name, of type
// typ (postgresql, kafka ...), which runs commands with exec.
func NewDispatcher(name, typ string, exec *api.Executor, log *slog.Logger) *Dispatcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("consumer", name, "type", typ)
	d := &Dispatcher{
		name: name, typ: typ, exec: exec, log: log, fails: faillog.New(log),
		stats:      &Stats{},
		minBackoff: 50 * time.Millisecond, maxBackoff: 5 * time.Second,
	}
	// Unknown until the consumer reports it: a source that cannot tell
	// must not read as "nothing behind".
	d.stats.lag.Store(-1)
	return d
}

// Name is the consumer's name.
func (d *Dispatcher) Name() string { return d.name }

// Logger is the consumer's logger, which names it.
func (d *Dispatcher) Logger() *slog.Logger { return d.log }

// Stats are the consumer's counters and state.
func (d *Dispatcher) Stats() *Stats { return d.stats }

// Dispatch runs msgs in order and returns how many of them are done: run,
// or skipped because they can never run. While a command fails for a
// temporary reason it is run again, with back-off, and the messages
// after it wait. Dispatch returns early, with the messages done so far
// and ctx's error, only when ctx ends while it waits to run one again:
// the caller must then leave msgs[done:] unacknowledged, to be delivered
// again. A command that has started always runs to its end, so that ctx
// may be the consumer's stop signal.
//
// The messages done first in a batch are those the caller may
// acknowledge; when msgs[k] fails, messages after it in the same batch
// may have been published already (a publish batch runs at once), and are
// published again on the retry: an idempotency key makes that harmless.
//
// With tracing on, each message is a CONSUMER span from the start of
// Dispatch until the message is done (or Dispatch returns without it).
func (d *Dispatcher) Dispatch(ctx context.Context, msgs []Message) (done int, err error) {
	var spans []trace.Span
	if d.trace.tracer != nil {
		spans = d.trace.start(msgs)
		defer func() { endUndone(spans[done:]) }()
	}
	backoff := d.minBackoff
	for done < len(msgs) {
		var pending []trace.Span
		if spans != nil {
			pending = spans[done:]
		}
		n, reason := d.run(msgs[done:], pending)
		if spans != nil && done+n < len(msgs) {
			retrying(spans[done+n], reason)
		}
		done += n
		if done == len(msgs) {
			break
		}
		d.stats.retries.Add(1)
		d.stats.setError(reason)
		d.fails.Add("retry", slog.LevelWarn, "consumed command failed, retrying",
			"position", msgs[done].Position, "error", reason, "retry_in", backoff)
		t := time.NewTimer(jitter(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return done, ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, d.maxBackoff)
	}
	return done, nil
}

// run runs msgs once and returns how many of them are done before the
// first one that failed for a temporary reason, and that reason. spans,
// when tracing, are the messages' spans: their commands run in them, and
// those of the messages done end.
func (d *Dispatcher) run(msgs []Message, spans []trace.Span) (int, string) {
	var cmds []api.Command
	// owner[i] is the message of cmds[i] (a batch message has several).
	var owner []int
	for i := range msgs {
		mc := msgs[i].commands()
		if spans != nil {
			inSpan(spans[i], &msgs[i], mc)
		}
		for _, c := range mc {
			cmds = append(cmds, c)
			owner = append(owner, i)
		}
	}
	// The commands run detached from any deadline of the caller: a
	// command that has started finishes, so that what is acknowledged is
	// what ran.
	replies := d.exec.Run(context.Background(), cmds)
	// A message is done when none of its commands failed for a temporary
	// reason; skipped when one of them failed for good.
	skipped := make([]string, len(msgs))
	for i, r := range replies {
		m := owner[i]
		if r.Temporary() {
			d.count(msgs[:m], skipped)
			if spans != nil {
				endDone(spans[:m])
			}
			return m, replyError(&r)
		}
		if r.Error != nil && skipped[m] == "" {
			skipped[m] = fmt.Sprintf("%s: %d %s", methodName(&cmds[i]), r.Error.Code, r.Error.Message)
			if spans != nil {
				skippedSpan(spans[m], &msgs[m], r.Error)
			}
		}
	}
	d.count(msgs, skipped)
	if spans != nil {
		endDone(spans)
	}
	return len(msgs), ""
}

// count adds the messages done to the counters and logs those skipped.
func (d *Dispatcher) count(msgs []Message, skipped []string) {
	var ok, bad uint64
	for i := range msgs {
		if skipped[i] == "" {
			ok++
			continue
		}
		bad++
		why := skipped[i]
		if msgs[i].Err != nil {
			why = "malformed message: " + msgs[i].Err.Error()
		}
		d.stats.setError(why)
		d.fails.Add("skip", slog.LevelError, "consumed message skipped: it cannot run",
			"position", msgs[i].Position, "error", why)
	}
	d.stats.processed.Add(ok)
	d.stats.skipped.Add(bad)
	if ok > 0 {
		d.stats.lastProcessed.Store(time.Now().UnixMilli())
	}
}

func methodName(c *api.Command) string {
	if m := c.Method(); m != "" {
		return m
	}
	return "command"
}

func replyError(r *api.Reply) string {
	if r.Error != nil {
		return fmt.Sprintf("%d %s", r.Error.Code, r.Error.Message)
	}
	if b, ok := r.Result.(api.BroadcastResult); ok {
		for _, resp := range b.Responses {
			if resp.Error != nil {
				return fmt.Sprintf("broadcast: %d %s", resp.Error.Code, resp.Error.Message)
			}
		}
	}
	return "temporary failure"
}

// jitter spreads waits of several partitions apart: between d/2 and d.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// SourceFailed records that the consumer lost its source (a failed poll,
// a dropped connection) and logs it without flooding the log. The
// consumer keeps trying; SourceOK records that it is back.
func (d *Dispatcher) SourceFailed(what string, err error) {
	d.stats.sourceErrors.Add(1)
	d.stats.connected.Store(false)
	d.stats.setError(what + ": " + err.Error())
	d.fails.Add("source", slog.LevelWarn, "consumer source failed", "what", what, "error", err)
}

// SourceOK records that the consumer reaches its source.
func (d *Dispatcher) SourceOK() {
	if !d.stats.connected.Swap(true) {
		d.log.Info("consumer connected")
	}
}

// SetLag records how many messages wait in the source to be consumed; -1
// when the source cannot tell.
func (d *Dispatcher) SetLag(n int64) { d.stats.lag.Store(n) }

// Backoff waits after a failure of the source: between the dispatcher's
// bounds, doubling with each attempt (0 the first). It reports false when
// ctx ended first.
func (d *Dispatcher) Backoff(ctx context.Context, attempt int) bool {
	wait := d.minBackoff << min(attempt, 16)
	if wait > d.maxBackoff || wait <= 0 {
		wait = d.maxBackoff
	}
	t := time.NewTimer(jitter(wait))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Stats are a consumer's counters and state, read by the metrics, /health
// and the admin API.
type Stats struct {
	processed, skipped, retries, sourceErrors atomic.Uint64
	// lag is the number of messages waiting in the source, -1 unknown.
	lag           atomic.Int64
	connected     atomic.Bool
	lastProcessed atomic.Int64 // Unix ms

	mu        sync.Mutex
	lastError string
	lastErrAt time.Time
}

func (s *Stats) setError(e string) {
	s.mu.Lock()
	s.lastError, s.lastErrAt = e, time.Now()
	s.mu.Unlock()
}

// Snapshot is the state of one consumer at one moment.
type Snapshot struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Running is false once the consumer stopped (at shutdown, or after
	// a failure it cannot get past; Error then says why).
	Running bool `json:"running"`
	// Connected tells whether the consumer reaches its source now.
	Connected bool `json:"connected"`
	// Processed counts the messages run, Skipped those that could never
	// run, Retries the runs of a command that failed for a temporary
	// reason, SourceErrors the failures to read from the source.
	Processed    uint64 `json:"processed"`
	Skipped      uint64 `json:"skipped"`
	Retries      uint64 `json:"retries"`
	SourceErrors uint64 `json:"source_errors"`
	// Lag is the number of messages waiting in the source, -1 when it
	// cannot tell.
	Lag int64 `json:"lag"`
	// LastProcessed is when a message was last run (Unix ms, 0 never).
	LastProcessed int64 `json:"last_processed_ms"`
	// Error is the last error and ErrorTime when it happened (Unix ms).
	Error     string `json:"error,omitempty"`
	ErrorTime int64  `json:"error_time_ms,omitempty"`
}

func (d *Dispatcher) snapshot() Snapshot {
	s := d.stats
	snap := Snapshot{
		Name: d.name, Type: d.typ, Connected: s.connected.Load(),
		Processed: s.processed.Load(), Skipped: s.skipped.Load(), Retries: s.retries.Load(),
		SourceErrors: s.sourceErrors.Load(), Lag: s.lag.Load(), LastProcessed: s.lastProcessed.Load(),
	}
	s.mu.Lock()
	snap.Error = s.lastError
	if !s.lastErrAt.IsZero() {
		snap.ErrorTime = s.lastErrAt.UnixMilli()
	}
	s.mu.Unlock()
	return snap
}
