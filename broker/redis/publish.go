package redis

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/broker/internal/same"
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

// PublishMany publishes each item in the item's Redis, the items of one
// Redis pipelined, in one round trip, and Redis runs them in the order
// sent, so per channel they keep their order; several Redis servers (a
// sharded setup, a cluster's masters) are sent to at the same time.
// Delivery to this node's handler comes back through pub/sub like everyone
// else's. With PatternScope the publication also goes to the scope's
// pub/sub channel of the channel's base (patterns.go).
//
// Most items run the publish script (lua/publish.lua): idempotency check,
// offset, history append, delta base and pub/sub message happen
// atomically for each. A plain item skips it and goes out as PUBLISH
// (SPUBLISH in a cluster) of the message the script would send, as
// cheap as pub/sub gets: one without history (HistorySize or HistoryTTL
// zero), idempotency key or UseDelta, in a channel that takes no delta
// (NoDelta, so that there is no delta base to clear), unless an earlier
// item of the same call in its channel ran the script (see plainItem).
// A plain item's result is what the script's would be: offset 0, no
// epoch, not suppressed.
//
// Consecutive items into one channel with history and the same options,
// without idempotency key, version or UseDelta (a batch from one
// publisher), go as one script call, a run of up to maxRun publications
// and maxRunBytes: the script's reads and expiries, which cost more than
// the append, are paid once per run. Their offsets follow each other as
// they would have.
func (b *Broker) PublishMany(items []broker.PublishItem) {
	calls := make([]publishCall, len(items))
	for i := range items {
		calls[i].item = &items[i]
	}
	b.runScript(calls, b.checkOpen())
}

// runScript publishes each call, by the publish script or, for a plain
// item, by PUBLISH, or sets refused on each when it is not nil, as
// PublishMany and Store.Append do.
func (b *Broker) runScript(calls []publishCall, refused error) {
	var perClient []int // calls per client, counted when there are several
	if len(b.e.clients) > 1 {
		perClient = make([]int, len(b.e.clients))
	}
	enc := encoder{now: time.Now().UnixMilli()}
	var scripted map[string]bool // channels with a script call so far
	for i := range calls {
		c := &calls[i]
		c.reset()
		if refused != nil {
			c.item.Err = refused
			continue
		}
		c.plain = c.store == nil && plainItem(c.item.Opts) && !scripted[c.item.Channel]
		if !c.plain && c.store == nil && (scripted != nil || i+1 < len(calls)) {
			if scripted == nil {
				scripted = make(map[string]bool)
			}
			scripted[c.item.Channel] = true
		}
		if err := b.prepare(c, &enc); err != nil {
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
	b.groupPlain(calls)
	joinRuns(calls)
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
	defer cancel()
	if perClient == nil {
		b.runCalls(ctx, 0, calls)
	} else {
		// Each client's calls, in order, on a goroutine of their own.
		var wg sync.WaitGroup
		for ci, n := range perClient {
			if n > 0 {
				wg.Go(func() { b.runCalls(ctx, ci, calls) })
			}
		}
		wg.Wait()
	}
	for i := range calls {
		calls[i].settleRun()
		calls[i].settleGroup()
	}
}

// maxRun and maxRunBytes bound the publications of one script call, in
// number and in bytes: Redis serves nobody else while a script runs.
const (
	maxRun      = 128
	maxRunBytes = 1 << 20
)

// joinRuns makes each run of consecutive calls that joinable allows one
// script call, made by the run's first call, which carries the others'
// publications after its arguments (lua/publish.lua). The others are
// then not sent (client -1) and take their results from the first's
// (settleRun).
func joinRuns(calls []publishCall) {
	var lead *publishCall
	var runBytes int
	for i := range calls {
		c := &calls[i]
		size := 0
		if len(c.args) > argPublication { // plain and failed calls have none
			size = len(c.args[argPublication])
		}
		if lead != nil && len(lead.run) < maxRun-1 && runBytes+size <= maxRunBytes && joinable(lead, c) {
			lead.args = append(lead.args, c.args[argPublication])
			lead.run = append(lead.run, c)
			c.client = -1
			runBytes += size
			continue
		}
		lead = nil
		if c.client >= 0 && c.runnable() {
			lead, runBytes = c, size
		}
	}
}

// runnable reports whether the call may be part of a run: a script call
// with history, without idempotency key, version or delta, whose result
// is a position only.
func (c *publishCall) runnable() bool {
	return !c.plain && c.store == nil && c.history &&
		c.args[argDelta] != "1" && c.args[argIdempotencyTTL] == "0" && c.args[argVersion] == "0"
}

// joinable reports whether c may join lead's run: into the same place
// with the same arguments, but for its publication and the epoch that a
// new stream would take (the run takes the first's).
func joinable(lead, c *publishCall) bool {
	if c.client != lead.client || !c.runnable() || !slices.Equal(c.keys, lead.keys) {
		return false
	}
	for k := range publishArgs {
		if k != argPublication && k != argEpoch && c.args[k] != lead.args[k] {
			return false
		}
	}
	return true
}

// settleRun gives the calls that joined c's run their results: each
// publication's offset follows the one before it.
func (c *publishCall) settleRun() {
	first := c.item
	for k, o := range c.run {
		o.item.Err, o.item.Suppressed = first.Err, false
		if first.Err == nil {
			o.item.Position = broker.StreamPosition{Offset: first.Position.Offset + uint64(k+1), Epoch: first.Position.Epoch}
		}
	}
}

// plainItem reports whether the script would do nothing for an item with
// opts but send its message: no history, no idempotency key, no delta,
// and no delta base to clear (NoDelta; the script clears the base of a
// publication without delta, so that a later delta is not computed
// against a publication older than the last one subscribers got). A
// version without history is ignored by the script too.
//
// Per channel a plain item goes out only before the first item of the
// call that runs the script: a script call that meets NOSCRIPT is sent
// again only when no later call of its channel ran (retryPlan), and a
// PUBLISH always runs, so a plain item after it would make it fail
// instead; as a script call, the item waits for the retry with it.
func plainItem(opts broker.PublishOptions) bool {
	return opts.NoDelta && !opts.UseDelta && opts.IdempotencyKey == "" &&
		(opts.HistorySize <= 0 || opts.HistoryTTL <= 0)
}

// publishCall is one publish of PublishMany: a script call, or PUBLISH
// commands for a plain item.
type publishCall struct {
	item *broker.PublishItem
	// store is the item's StoreItem for Store.Append (item points into
	// it), nil for PublishMany: the script then sends nothing over
	// pub/sub, stores store.Time and returns the previous publication.
	store   *broker.StoreItem
	client  int    // index in Engine.clients; -1 when the item failed already or goes in another's group
	shard   int    // index in Engine.bases
	base    string // the key base of the channel's shard (one slot in a cluster)
	history bool   // the channel keeps history: the script checks the stream's master
	keys    []string
	args    []string
	// plain: the item goes out as PUBLISH of msg to pubsub, and of
	// scopeMsg to scopePubSub when the channel has a pattern scope, not
	// by the script (plainItem); keys and args are then unused.
	plain                 bool
	pubsub, msg           string
	scopePubSub, scopeMsg string
	// run are the calls whose publications this one's script call
	// carries after its own (joinRuns).
	run []*publishCall
	// group are the plain calls whose channels this one's PUBLISH, to
	// its shard's group pub/sub channel, carries after its own
	// (groupPlain).
	group []*publishCall
}

// reset clears the results an earlier call left in the item.
func (c *publishCall) reset() {
	c.item.Position, c.item.Suppressed, c.item.Err = broker.StreamPosition{}, false, nil
	if c.store != nil {
		c.store.Prev = nil
	}
}

// encoder encodes the publications of one PublishMany. A broadcast
// publishes the same data, tags and info into many channels: an item
// that publishes what the item before it did (the same slices and maps,
// as the server API's broadcast passes) reuses its encoding, and a plain
// item its whole pub/sub message.
type encoder struct {
	now int64 // the publications' time, Unix milliseconds
	// The previous item's publication: its inputs and encoding.
	data []byte
	info *broker.ClientInfo
	tags map[string]string
	time int64
	pub  []byte
	// The previous trace and its message head.
	trace []byte
	head  string
	// The last plain message, and the publication and head it holds.
	msg     string
	msgPub  []byte
	msgHead string
	// What the items of one channel share, kept for the next item (a
	// batch publishes into one channel, and so does a run).
	channel, base, pubsub string
	keys                  []string // streamKeys: read only
	epochs                string   // one new epoch for the call
	numbers               [3]int64 // the last numbers formatted (number)
	numberStrings         [3]string
	// names holds the bytes of the pub/sub names made, appended to and
	// never changed, so that a broadcast into thousands of channels
	// makes a few chunks instead of a string for each channel.
	names []byte
}

// pubsubName is the pub/sub channel of channel in base.
func (e *encoder) pubsubName(base, channel string) string {
	if e.pubsub == "" || channel != e.channel || base != e.base {
		e.channel, e.base, e.keys = channel, base, nil
		e.pubsub = e.join(base, pubsubInfix, channel)
	}
	return e.pubsub
}

// join is a+b+c, made in e.names.
func (e *encoder) join(a, b, c string) string {
	n := len(a) + len(b) + len(c)
	if n == 0 {
		return ""
	}
	if cap(e.names)-len(e.names) < n {
		// The full chunk stays alive as long as a name in it does.
		e.names = make([]byte, 0, max(4096, n))
	}
	start := len(e.names)
	e.names = append(append(append(e.names, a...), b...), c...)
	return unsafe.String(&e.names[start], n)
}

// streamKeys are the publish script's keys for channel in base (the
// idempotency result's is the meta's), shared by the calls: not to be
// changed.
func (e *encoder) streamKeys(base, channel string) []string {
	e.pubsubName(base, channel)
	if e.keys == nil {
		meta := metaKey(base, channel)
		e.keys = []string{streamKey(base, channel), meta, meta, base + replIDSuffix}
	}
	return e.keys
}

// epoch is the epoch a stream that has none takes: one for the call, as
// no two of its items can start the same stream.
func (e *encoder) epoch() string {
	if e.epochs == "" {
		e.epochs = newEpoch()
	}
	return e.epochs
}

// number formats n, keeping the last few.
func (e *encoder) number(n int64) string {
	for i, m := range e.numbers {
		if m == n && e.numberStrings[i] != "" {
			return e.numberStrings[i]
		}
	}
	copy(e.numbers[1:], e.numbers[:2])
	copy(e.numberStrings[1:], e.numberStrings[:2])
	e.numbers[0], e.numberStrings[0] = n, strconv.FormatInt(n, 10)
	return e.numberStrings[0]
}

// publication returns the encoding of a publication of data with opts
// at time at.
func (e *encoder) publication(data []byte, opts *broker.PublishOptions, at int64) ([]byte, error) {
	if e.pub != nil && at == e.time && opts.ClientInfo == e.info && same.Bytes(data, e.data) && same.Map(opts.Tags, e.tags) {
		return e.pub, nil
	}
	// Encoding copies data, tags and info, so the caller may reuse them.
	pub, err := (&protocol.Publication{
		Data: data,
		Info: pubconv.ToProtoInfo(opts.ClientInfo),
		Tags: opts.Tags,
		Time: at,
	}).MarshalVT()
	if err != nil {
		return nil, fmt.Errorf("redis: encode publication: %w", err)
	}
	e.data, e.info, e.tags, e.time, e.pub = data, opts.ClientInfo, opts.Tags, at, pub
	return pub, nil
}

// messageHead returns messageHead(trace), reusing the previous one when
// the trace is the same.
func (e *encoder) messageHead(trace []byte) (string, error) {
	if len(trace) == 0 {
		return "", nil
	}
	if e.head != "" && bytes.Equal(trace, e.trace) {
		return e.head, nil
	}
	head, err := messageHead(trace)
	if err != nil {
		return "", err
	}
	e.trace, e.head = trace, head
	return head, nil
}

// message returns the pub/sub message the script sends for a publication
// without offset or delta: head, then the publication (field 2).
func (e *encoder) message(pub []byte, head string) string {
	if e.msg != "" && same.Bytes(pub, e.msgPub) && head == e.msgHead {
		return e.msg
	}
	msg := make([]byte, 0, len(head)+1+binary.MaxVarintLen64+len(pub))
	msg = append(msg, head...)
	msg = append(msg, '\x12')
	msg = binary.AppendUvarint(msg, uint64(len(pub)))
	msg = append(msg, pub...)
	e.msg, e.msgPub, e.msgHead = rueidis.BinaryString(msg), pub, head
	return e.msg
}

// scopeMessage is msg as the script sends it to a pattern scope: with the
// channel's name (field 9).
func scopeMessage(msg, channel string) string {
	out := make([]byte, 0, len(msg)+1+binary.MaxVarintLen64+len(channel))
	out = append(out, msg...)
	out = append(out, '\x4a')
	out = binary.AppendUvarint(out, uint64(len(channel)))
	out = append(out, channel...)
	return rueidis.BinaryString(out)
}

// prepare encodes the item's publication and fills in the script's keys
// and arguments, or a plain item's PUBLISH.
func (b *Broker) prepare(c *publishCall, enc *encoder) error {
	it := c.item
	opts := it.Opts
	now := enc.now
	if c.store != nil && c.store.Time != 0 {
		now = c.store.Time
	}
	pub, err := enc.publication(it.Data, &opts, now)
	if err != nil {
		return err
	}
	ci, si := b.e.locate(it.Channel)
	base := b.e.bases[si]
	c.client, c.shard, c.base = ci, si, base
	pubsub, command := enc.pubsubName(base, it.Channel), b.e.publishCommand()
	var scopePubSub, scopeChannel, head string
	switch {
	case c.store != nil:
		pubsub, command = "", "" // the caller delivers
	case opts.PatternScope != "":
		scopePubSub, scopeChannel = scopeName(base, opts.PatternScope), it.Channel
	}
	if command != "" {
		if head, err = enc.messageHead(opts.Trace); err != nil {
			return err
		}
	}
	if c.plain {
		c.pubsub, c.msg = pubsub, enc.message(pub, head)
		if scopePubSub != "" {
			c.scopePubSub, c.scopeMsg = scopePubSub, scopeMessage(c.msg, scopeChannel)
		}
		return nil
	}

	keys := enc.streamKeys(base, it.Channel)
	var size, ttl int64
	var epoch string
	if opts.HistorySize > 0 && opts.HistoryTTL > 0 {
		size, ttl = int64(opts.HistorySize), millis(opts.HistoryTTL)
		epoch = enc.epoch()
	}
	var version uint64
	if size > 0 {
		version = opts.Version
	}
	var idemTTL int64
	if opts.IdempotencyKey != "" {
		keys = slices.Clone(keys) // enc shares them
		keys[2] = idemKey(base, it.Channel, opts.IdempotencyKey)
		idemTTL = millis(orDefault(opts.IdempotentResultTTL, b.cfg.IdempotentResultTTL))
	}
	delta := "0"
	switch {
	case opts.UseDelta:
		delta = "1"
	case opts.NoDelta:
		delta = "-" // no delta base to clear
	}
	c.keys = keys
	c.args = []string{
		pubsub,
		rueidis.BinaryString(pub),
		enc.number(size),
		enc.number(ttl),
		enc.number(millis(orDefault(opts.HistoryMetaTTL, b.cfg.HistoryMetaTTL))),
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

// appendCmds appends the call's commands to cmds: the script's (by
// EVALSHA, or with its body by EVAL when withBody), or a plain item's
// PUBLISH, two with a pattern scope.
func (c *publishCall) appendCmds(cmds rueidis.Commands, client rueidis.Client, publish string, withBody bool) rueidis.Commands {
	if !c.plain {
		return append(cmds, publishScript.cmd(client, c.keys, c.args, withBody))
	}
	cmds = append(cmds, publishCmd(client, publish, c.pubsub, c.msg))
	if c.scopePubSub != "" {
		cmds = append(cmds, publishCmd(client, publish, c.scopePubSub, c.scopeMsg))
	}
	return cmds
}

// publishCmd is PUBLISH, or SPUBLISH when publish says so, of msg to
// channel.
func publishCmd(client rueidis.Client, publish, channel, msg string) rueidis.Completed {
	if publish == "SPUBLISH" {
		return client.B().Spublish().Channel(channel).Message(msg).Build()
	}
	return client.B().Publish().Channel(channel).Message(msg).Build()
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

// Indexes in publishCall.args, of the script's ARGV from 1
// (lua/publish.lua): publishArgs in all, then a run's publications.
const (
	argPublication    = 1
	argEpoch          = 5
	argDelta          = 6
	argIdempotencyTTL = 7
	argVersion        = 11
	// how the script learns its server's replication id (see
	// lua/stream_common.lua)
	argReplicationRead = 13
	publishArgs        = 16
)

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
	publish := b.e.publishCommand()
	cmds := make(rueidis.Commands, 0, len(sent))
	b.markReplicationReads(sent)
	for _, c := range sent {
		cmds = c.appendCmds(cmds, client, publish, false)
	}
	results := callResults(sent, do(ctx, cmds...))
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
			cmds = c.appendCmds(cmds, client, publish, isNoScript(err))
		case isNoScript(err):
			c.item.Err = fmt.Errorf("redis: publish: the script was missing, and a later publish to the channel ran meanwhile: %w", broker.ErrNotAvailable)
		default:
			c.setResult(results[i])
		}
	}
	if again == 0 {
		return
	}
	again2 := callResults(retried, do(ctx, cmds...))
	for k, c := range retried {
		c.setResult(again2[k])
	}
}

// callResults turns the replies to the commands of calls (appendCmds) into
// one result per call: a plain item with a pattern scope sent two
// PUBLISH, and its result is the first that failed, if one did.
func callResults(calls []*publishCall, replies []rueidis.RedisResult) []rueidis.RedisResult {
	n := 0
	for _, c := range calls {
		n += c.commands()
	}
	if n == len(calls) && len(replies) == n {
		return replies
	}
	results := make([]rueidis.RedisResult, len(calls))
	if len(replies) != n {
		err := fmt.Errorf("redis: publish: %d replies to %d commands", len(replies), n)
		for i := range results {
			results[i] = rueidis.NewErrorResult(err)
		}
		return results
	}
	k := 0
	for i, c := range calls {
		results[i] = replies[k]
		for _, r := range replies[k+1 : k+c.commands()] {
			if results[i].Error() == nil {
				results[i] = r
			}
		}
		k += c.commands()
	}
	return results
}

// commands is the number of commands appendCmds sends for the call.
func (c *publishCall) commands() int {
	if c.plain && c.scopePubSub != "" {
		return 2
	}
	return 1
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

// setResult sets the item's result from the publish script's reply, or
// from PUBLISH's for a plain item: the script's result for such an item,
// offset 0, no epoch, not suppressed, is what reset left.
func (c *publishCall) setResult(res rueidis.RedisResult) {
	if c.plain {
		if err := res.Error(); err != nil {
			c.item.Err = wrapErr("publish", err)
		}
		return
	}
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
