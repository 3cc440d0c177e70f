package redis

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/gyrehq/gyre/protocol"
	"github.com/redis/rueidis"
)

// Publish is PublishMany with one item.
func (b *Broker) Publish(channel string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	item := [1]broker.PublishItem{{Channel: channel, Data: data, Opts: opts}}
	b.PublishMany(item[:])
	return item[0].Position, item[0].Suppressed, item[0].Err
}

// PublishMany runs the publish script (lua/publish.lua) once per item in
// the item's Redis: idempotency check, offset, history append, delta base
// and pub/sub message happen atomically for each. The items of one Redis
// go out pipelined, in one round trip, and Redis runs them in the order
// sent, so per channel they keep their order; several Redis servers (a
// sharded setup, a cluster's masters) are sent to at the same time.
// Delivery to this node's handler comes back through pub/sub like everyone
// else's. With PatternScope the script also sends the publication to the
// scope's pub/sub channel of the channel's base (patterns.go).
func (b *Broker) PublishMany(items []broker.PublishItem) {
	calls := make([]publishCall, len(items))
	for i := range items {
		calls[i].item = &items[i]
	}
	b.runScript(calls, b.checkOpen())
}

// runScript runs the publish script for each call, or sets refused on
// each when it is not nil, as PublishMany and Store.Append do.
func (b *Broker) runScript(calls []publishCall, refused error) {
	var perClient []int // calls per client, counted when there are several
	if len(b.e.clients) > 1 {
		perClient = make([]int, len(b.e.clients))
	}
	for i := range calls {
		c := &calls[i]
		c.reset()
		if refused != nil {
			c.item.Err = refused
			continue
		}
		if err := b.prepare(c); err != nil {
			c.item.Err = err
			c.client = -1
			continue
		}
		if perClient != nil {
			perClient[c.client]++
		}
	}
	if refused != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
	defer cancel()
	if perClient == nil {
		b.runCalls(ctx, 0, calls)
		return
	}
	// Each client's calls, in order, on a goroutine of their own.
	var wg sync.WaitGroup
	for ci, n := range perClient {
		if n > 0 {
			wg.Go(func() { b.runCalls(ctx, ci, calls) })
		}
	}
	wg.Wait()
}

// publishCall is one publish script call of PublishMany.
type publishCall struct {
	item *broker.PublishItem
	// store is the item's StoreItem for Store.Append (item points into
	// it), nil for PublishMany: the script then sends nothing over
	// pub/sub, stores store.Time and returns the previous publication.
	store   *broker.StoreItem
	client  int    // index in Engine.clients; -1 when the item failed already
	base    string // the key base of the channel's shard (one slot in a cluster)
	history bool   // the channel keeps history: the script checks the stream's master
	keys    []string
	args    []string
}

// reset clears the results an earlier call left in the item.
func (c *publishCall) reset() {
	c.item.Position, c.item.Suppressed, c.item.Err = broker.StreamPosition{}, false, nil
	if c.store != nil {
		c.store.Prev = nil
	}
}

// prepare encodes the item's publication and fills in the script's keys
// and arguments.
func (b *Broker) prepare(c *publishCall) error {
	it := c.item
	opts := it.Opts
	// Encoding copies data, tags and info, so the caller may reuse them.
	now := time.Now().UnixMilli()
	if c.store != nil && c.store.Time != 0 {
		now = c.store.Time
	}
	pub, err := (&protocol.Publication{
		Data: it.Data,
		Info: pubconv.ToProtoInfo(opts.ClientInfo),
		Tags: opts.Tags,
		Time: now,
	}).MarshalVT()
	if err != nil {
		return fmt.Errorf("redis: encode publication: %w", err)
	}
	ci, si := b.e.locate(it.Channel)
	base := b.e.bases[si]
	meta := metaKey(base, it.Channel)
	keys := []string{streamKey(base, it.Channel), meta, meta, base + replIDSuffix}

	var size, ttl int64
	var epoch string
	if opts.HistorySize > 0 && opts.HistoryTTL > 0 {
		size, ttl = int64(opts.HistorySize), millis(opts.HistoryTTL)
		epoch = newEpoch()
	}
	var version uint64
	if size > 0 {
		version = opts.Version
	}
	var idemTTL int64
	if opts.IdempotencyKey != "" {
		keys[2] = idemKey(base, it.Channel, opts.IdempotencyKey)
		idemTTL = millis(orDefault(opts.IdempotentResultTTL, b.cfg.IdempotentResultTTL))
	}
	delta := "0"
	if opts.UseDelta {
		delta = "1"
	}
	pubsub, command := base+pubsubInfix+it.Channel, b.e.publishCommand()
	var scopePubSub, scopeChannel, head string
	switch {
	case c.store != nil:
		pubsub, command = "", "" // the caller delivers
	case opts.PatternScope != "":
		scopePubSub, scopeChannel = scopeName(base, opts.PatternScope), it.Channel
	}
	if command != "" && len(opts.Trace) > 0 {
		if head, err = messageHead(opts.Trace); err != nil {
			return err
		}
	}
	c.client, c.base, c.keys = ci, base, keys
	c.args = []string{
		pubsub,
		rueidis.BinaryString(pub),
		strconv.FormatInt(size, 10),
		strconv.FormatInt(ttl, 10),
		strconv.FormatInt(millis(orDefault(opts.HistoryMetaTTL, b.cfg.HistoryMetaTTL)), 10),
		epoch,
		delta,
		strconv.FormatInt(idemTTL, 10),
		command,
		scopePubSub,
		scopeChannel,
		strconv.FormatUint(version, 10),
		opts.VersionEpoch,
		"", // how the script learns the replication id: set per pipeline (markReplicationReads)
		b.durableRestarts,
		head,
	}
	c.history = size > 0
	return nil
}

// messageHead is what the pub/sub messages of a publication start with,
// before the fields the script appends: the trace, which only the
// messages carry.
func messageHead(trace []byte) (string, error) {
	head, err := (&wirepb.Message{Trace: trace}).MarshalVT()
	if err != nil {
		return "", fmt.Errorf("redis: encode trace: %w", err)
	}
	return rueidis.BinaryString(head), nil
}

// argReplicationRead is the index in publishCall.args of how the script
// learns its server's replication id (see lua/stream_common.lua).
const argReplicationRead = 13

// markReplicationReads sets, for the calls of one pipeline, how each
// learns its server's replication id: the first call with history on each
// key base reads it from INFO and, when more follow, leaves it with the
// pipeline's token for them; in a cluster each call reads INFO, since
// Redis may redirect a single call to another server.
func (b *Broker) markReplicationReads(calls []*publishCall) {
	var token string
	var first []*publishCall // the first call with history of each base
	for _, c := range calls {
		if !c.history {
			continue
		}
		if b.e.mode == modeCluster {
			c.args[argReplicationRead] = "o"
			continue
		}
		i := slices.IndexFunc(first, func(f *publishCall) bool { return f.base == c.base })
		if i < 0 {
			first = append(first, c)
			c.args[argReplicationRead] = "o"
			continue
		}
		if token == "" {
			token = strconv.FormatUint(b.pipelines.Add(1), 36) + b.pipelineSalt
		}
		first[i].args[argReplicationRead] = "i:" + token
		c.args[argReplicationRead] = "k:" + token
	}
}

// runCalls sends the calls meant for client ci (others are skipped) in one
// pipeline and sets their items' results.
//
// A call can fail without running in two ways that are worth a second
// try, made once, in order, for the calls concerned:
//
//   - the Redis does not know the script (NOSCRIPT, after a restart or a
//     SCRIPT FLUSH): the retry sends the script itself. Redis
//     serves other connections between parts of a long pipeline, so
//     another node may load the script while ours runs, and a later call
//     of the same channel may then have run: such a call is not retried
//     but fails (it would take an offset after the later one), with an
//     error wrapping broker.ErrNotAvailable;
//   - the connection broke (a connection that broke while idle fails the
//     first commands sent on it) and the call has an idempotency key,
//     which makes running it twice harmless. Its first attempt may have
//     run with only the reply lost: the retry then reports it Suppressed,
//     at its position.
//
// Other calls that failed on the connection are not retried: they may have
// run.
func (b *Broker) runCalls(ctx context.Context, ci int, calls []publishCall) {
	sent := make([]*publishCall, 0, len(calls))
	for i := range calls {
		if c := &calls[i]; c.client == ci {
			sent = append(sent, c)
		}
	}
	if b.cfg.SyncReplicas > 0 {
		b.runCallsSynced(ctx, ci, sent)
		return
	}
	b.runPipeline(ctx, ci, sent, b.e.clients[ci].DoMulti)
}

// runPipeline sends the calls with do as one pipeline, retries what
// retryPlan says once, and sets the items' results.
func (b *Broker) runPipeline(ctx context.Context, ci int, sent []*publishCall, do func(context.Context, ...rueidis.Completed) []rueidis.RedisResult) {
	client := b.e.clients[ci]
	cmds := make(rueidis.Commands, 0, len(sent))
	b.markReplicationReads(sent)
	for _, c := range sent {
		cmds = append(cmds, publishScript.cmd(client, c.keys, c.args, false))
	}
	results := do(ctx, cmds...)
	retry, again := retryPlan(sent, results, ctx.Err() != nil)
	// The retry gets a slice of its own: when a connection fails
	// mid-write, rueidis hands the results back while its writer may still
	// be reading the first pipeline's commands (a data race the race
	// detector found in a Redis restart test).
	cmds = make(rueidis.Commands, 0, again)
	var retried []*publishCall
	for i, c := range sent {
		if retry[i] {
			retried = append(retried, c)
		}
	}
	b.markReplicationReads(retried)
	for i, c := range sent {
		err := results[i].Error()
		switch {
		case retry[i]:
			// Each NOSCRIPT call carries the script: in a cluster the
			// calls of one pipeline go to several servers.
			cmds = append(cmds, publishScript.cmd(client, c.keys, c.args, isNoScript(err)))
		case isNoScript(err):
			c.item.Err = fmt.Errorf("redis: publish: the script was missing, and a later publish to the channel ran meanwhile: %w", broker.ErrNotAvailable)
		default:
			c.setResult(results[i])
		}
	}
	if again == 0 {
		return
	}
	again2 := do(ctx, cmds...)
	for k, c := range retried {
		c.setResult(again2[k])
	}
}

// retryPlan says which calls of a pipeline go again, given their results
// (see runCalls): a call that met NOSCRIPT unless a later call of its
// channel ran, and a call with an idempotency key that failed on the
// connection while the context was still live (expired: whatever failed
// failed for good).
func retryPlan(sent []*publishCall, results []rueidis.RedisResult, expired bool) (retry []bool, again int) {
	retry = make([]bool, len(results))
	// ran holds, while the results are read backwards, the channels of
	// the calls after the current one that ran; needed only when a call
	// met NOSCRIPT.
	var ran map[string]bool
	for _, r := range results {
		if isNoScript(r.Error()) {
			ran = make(map[string]bool)
			break
		}
	}
	for i := len(results) - 1; i >= 0; i-- {
		ch, err := sent[i].item.Channel, results[i].Error()
		_, isReply := rueidis.IsRedisErr(err)
		switch {
		case isNoScript(err):
			retry[i] = !ran[ch]
		case err != nil && !isReply && !expired:
			retry[i] = sent[i].item.Opts.IdempotencyKey != ""
		case ran != nil && (err == nil || isReply):
			ran[ch] = true
		}
		if retry[i] {
			again++
		}
	}
	return retry, again
}

func isNoScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}

// setResult sets the item's result from the publish script's reply.
func (c *publishCall) setResult(res rueidis.RedisResult) {
	arr, err := res.ToArray()
	if err != nil {
		c.item.Err = wrapErr("publish", err)
		return
	}
	var prev *broker.Publication
	c.item.Position, c.item.Suppressed, prev, c.item.Err = parsePublishResult(arr)
	if c.store != nil {
		c.store.Prev = prev
	}
}

// parsePublishResult reads the publish script's reply: position,
// suppressed flag and, for a store's delta item, the previous publication.
func parsePublishResult(res []rueidis.RedisMessage) (broker.StreamPosition, bool, *broker.Publication, error) {
	fail := func(err error) (broker.StreamPosition, bool, *broker.Publication, error) {
		return broker.StreamPosition{}, false, nil, err
	}
	if len(res) != 3 && len(res) != 4 {
		return fail(fmt.Errorf("redis: publish script returned %d values, want 3 or 4", len(res)))
	}
	offset, err := res[0].AsInt64()
	if err != nil {
		return fail(fmt.Errorf("redis: publish script offset: %w", err))
	}
	epoch, err := res[1].ToString()
	if err != nil {
		return fail(fmt.Errorf("redis: publish script epoch: %w", err))
	}
	suppressed, err := res[2].AsInt64()
	if err != nil {
		return fail(fmt.Errorf("redis: publish script flag: %w", err))
	}
	var prev *broker.Publication
	if len(res) == 4 {
		data, err := res[3].ToString()
		if err == nil {
			// Decoding copies, so the reply string is read in place.
			prev, err = pubconv.Decode(unsafe.Slice(unsafe.StringData(data), len(data)))
		}
		if err != nil {
			return fail(fmt.Errorf("redis: publish script previous publication: %w", err))
		}
	}
	return broker.StreamPosition{Offset: uint64(offset), Epoch: epoch}, suppressed == 1, prev, nil
}

// millis rounds a positive duration up to whole milliseconds, so that a
// sub-millisecond TTL does not become zero (no expiry, or an error).
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// newEpoch returns a short random stream epoch, used by a script only when
// it creates the stream. Six random bytes make eight characters.
func newEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
