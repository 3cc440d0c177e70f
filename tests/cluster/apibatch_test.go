package cluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestAPIBatchAcrossNodes sends node B batches of publishes interleaved
// over several channels, broadcasts to many channels and publishes that
// repeat idempotency keys, on one Redis, on two Redis servers channels are
// sharded between, and on a Redis Cluster. A client of node A gets every
// publication once, in offset order in each channel; the replies give
// each publish its place in its channel, in the order of the requests; a
// repeated key publishes nothing and answers the first publish's
// position; and the history of each channel on both nodes is what was
// published.
func TestAPIBatchAcrossNodes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		redis func(t *testing.T) redisSetup
	}{
		{"single", startSingleRedis},
		{"sharded", startShardedRedis},
		{"cluster", startClusterRedis},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.redis(t)
			a := gyreproc.Start(t, "A", nodeConfig("A", r.config))
			b := gyreproc.Start(t, "B", nodeConfig("B", r.config))
			all, batched := checkAPIBatches(t, a, b)
			checkSpread(t, r.shards, all)
			checkSpread(t, r.shards, batched)
		})
	}
}

// checkAPIBatches publishes through the API of b into 50 channels a
// client of a follows, then checks what the client got and the history on
// both nodes. It returns the channels, and those the batches publish to.
func checkAPIBatches(t *testing.T, a, b *gyreproc.Node) (all, batched []string) {
	t.Helper()
	for i := range 50 {
		all = append(all, "chat:many"+strconv.Itoa(i))
	}
	// The batches publish into the first few, which a sharded setup
	// spreads over its servers (checked by the caller).
	batched = all[:6]
	s := newStreams()
	c, _ := connectUser(t, a, "alice")
	for _, ch := range all {
		// Publishes keep the epoch the subscription was given.
		s.epochs[ch] = c.MustSubscribe(ch).Epoch
	}

	firstBatch(s, batched).sendBatch(t, b)
	bc := s.calls("keyed broadcast")
	bc.broadcast(all, `{"broadcast":1}`, "bc1")
	bc.sendEach(t, b)
	secondBatch(s, batched, all).sendBatch(t, b)

	// Keys of both batches repeated through the other node: nothing new.
	again := s.calls("repeats")
	again.again("b1k3")
	again.again("b2k17")
	again.sendEach(t, a)

	// A last publication in every channel: once it is delivered,
	// anything delivered twice before it is in the client's list.
	end := s.calls("last broadcast")
	end.broadcast(all, `{"end":true}`, "")
	end.sendEach(t, b)

	checkDelivered(t, c, s, all)
	for _, n := range []*gyreproc.Node{a, b} {
		checkHistory(t, n, s, all)
	}
	return all, batched
}

// firstBatch is 100 publishes to chans in runs of consecutive publishes to
// one channel, with a history and a failing publish in the middle, and
// idempotency keys repeated at once, further on, and in another channel.
func firstBatch(s *streams, chans []string) *apiCalls {
	c := s.calls("first batch")
	for i, ch := range runChannels(chans, 100, 1) {
		if i == 50 {
			// Sees every publish before it in the batch.
			c.history(chans[0])
			c.publishUnknown("nowhere:x")
		}
		key := ""
		if i%10 == 3 {
			key = "b1k" + strconv.Itoa(i)
		}
		c.publish(ch, `{"batch":1,"i":`+strconv.Itoa(i)+`}`, key)
		switch i {
		case 13:
			// In the same run of publishes to ch.
			c.again(key)
		case 60:
			// With publishes to other channels in between.
			c.again("b1k23")
		case 70:
			// A key belongs to its channel: in another it publishes.
			other := chans[(slices.Index(chans, s.sent["b1k23"].channel)+1)%len(chans)]
			c.publish(other, `{"batch":1,"i":70,"other":true}`, "b1k23")
		}
	}
	return c
}

// secondBatch is 100 more publishes to chans, with runs in another order,
// a broadcast to all, the keyed broadcast of the test repeated, a key of
// the first batch repeated, and info and history in between.
func secondBatch(s *streams, chans, all []string) *apiCalls {
	c := s.calls("second batch")
	for i, ch := range runChannels(chans, 100, 5) {
		switch i {
		case 5:
			c.again("b1k43")
		case 40:
			c.broadcast(all, `{"broadcast":2}`, "")
			c.info()
		case 70:
			c.broadcast(all, `{"broadcast":1}`, "bc1")
		case 80:
			c.history(ch)
		}
		key := ""
		if i%10 == 7 {
			key = "b2k" + strconv.Itoa(i)
		}
		c.publish(ch, `{"batch":2,"i":`+strconv.Itoa(i)+`}`, key)
	}
	return c
}

// runChannels spreads n publishes over chans in runs of one to five
// consecutive publishes to one channel; the channel changes with every
// run, by stride places in chans.
func runChannels(chans []string, n, stride int) []string {
	lengths := []int{1, 3, 2, 5, 1, 4, 2, 1}
	var out []string
	for run := 0; len(out) < n; run++ {
		ch := chans[(run*stride)%len(chans)]
		for range lengths[run%len(lengths)] {
			if len(out) < n {
				out = append(out, ch)
			}
		}
	}
	return out
}

// streams is what the channels of a test must hold: the data of each
// channel's publications in offset order, the offset each idempotency key
// got in each channel, and each channel's epoch.
type streams struct {
	data   map[string][]string
	offset map[string]uint64 // channel + " " + key
	epochs map[string]string
	// sent is the first publish of each key, to repeat it.
	sent map[string]sentPublish
}

type sentPublish struct{ channel, data string }

func newStreams() *streams {
	return &streams{
		data:   map[string][]string{},
		offset: map[string]uint64{},
		epochs: map[string]string{},
		sent:   map[string]sentPublish{},
	}
}

// publish records a publish of data into ch with an idempotency key (none
// if empty) and returns the offset it must be answered with: for a key
// already used in ch, the first publish's, and nothing is published.
func (s *streams) publish(ch, data, key string) uint64 {
	if key != "" {
		if off, ok := s.offset[ch+" "+key]; ok {
			return off
		}
	}
	s.data[ch] = append(s.data[ch], data)
	off := uint64(len(s.data[ch]))
	if key != "" {
		s.offset[ch+" "+key] = off
		if _, ok := s.sent[key]; !ok {
			s.sent[key] = sentPublish{ch, data}
		}
	}
	return off
}

// calls starts a list of API commands on s, named for the messages.
func (s *streams) calls(name string) *apiCalls { return &apiCalls{s: s, name: name} }

// apiCalls are API commands, each with the reply it must get.
type apiCalls struct {
	s    *streams
	name string
	cmds []map[string]any // {"<method>": request}
	want []wantReply
}

// wantReply is the reply a command must get: an error code, or for each
// channel it names the offset (a history's is its stream's top).
type wantReply struct {
	method   string
	channels []string
	offsets  []uint64
	code     uint32
}

func (c *apiCalls) add(method string, req map[string]any, w wantReply) {
	w.method = method
	c.cmds = append(c.cmds, map[string]any{method: req})
	c.want = append(c.want, w)
}

func (c *apiCalls) publish(ch, data, key string) {
	req := map[string]any{"channel": ch, "data": json.RawMessage(data)}
	if key != "" {
		req["idempotency_key"] = key
	}
	c.add("publish", req, wantReply{channels: []string{ch}, offsets: []uint64{c.s.publish(ch, data, key)}})
}

// again repeats the first publish with key.
func (c *apiCalls) again(key string) {
	p := c.s.sent[key]
	c.publish(p.channel, p.data, key)
}

// publishUnknown publishes into a channel of no namespace, which fails.
func (c *apiCalls) publishUnknown(ch string) {
	c.add("publish", map[string]any{"channel": ch, "data": json.RawMessage(`{}`)}, wantReply{code: 102})
}

func (c *apiCalls) broadcast(chs []string, data, key string) {
	req := map[string]any{"channels": chs, "data": json.RawMessage(data)}
	if key != "" {
		req["idempotency_key"] = key
	}
	w := wantReply{channels: chs}
	for _, ch := range chs {
		w.offsets = append(w.offsets, c.s.publish(ch, data, key))
	}
	c.add("broadcast", req, w)
}

func (c *apiCalls) history(ch string) {
	top := uint64(len(c.s.data[ch]))
	c.add("history", map[string]any{"channel": ch, "limit": 0}, wantReply{channels: []string{ch}, offsets: []uint64{top}})
}

func (c *apiCalls) info() { c.add("info", map[string]any{}, wantReply{}) }

// sendBatch posts the commands to n as one batch and checks the replies.
func (c *apiCalls) sendBatch(t *testing.T, n *gyreproc.Node) {
	t.Helper()
	raw, err := n.Call("batch", map[string]any{"commands": c.cmds})
	if err != nil {
		t.Fatalf("node %s: %v", n.Name, err)
	}
	var res struct {
		Replies []json.RawMessage `json:"replies"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("node %s: decode batch reply %s: %v", n.Name, raw, err)
	}
	if len(res.Replies) != len(c.cmds) {
		t.Fatalf("node %s: batch of %d commands answered with %d replies", n.Name, len(c.cmds), len(res.Replies))
	}
	for i, r := range res.Replies {
		c.check(t, fmt.Sprintf("node %s, %s, reply %d", n.Name, c.name, i), i, r)
	}
}

// sendEach posts each command to n on its own and checks its reply.
func (c *apiCalls) sendEach(t *testing.T, n *gyreproc.Node) {
	t.Helper()
	for i, cmd := range c.cmds {
		for method, req := range cmd {
			var reply []byte
			res, err := n.Call(method, req)
			var ae *gyreproc.APIError
			switch {
			case errors.As(err, &ae):
				reply, _ = json.Marshal(map[string]any{"error": ae})
			case err != nil:
				t.Fatalf("node %s: %v", n.Name, err)
			default:
				reply, _ = json.Marshal(map[string]json.RawMessage{method: res})
			}
			c.check(t, fmt.Sprintf("node %s, %s, %s %d", n.Name, c.name, method, i), i, reply)
		}
	}
}

// position is a publish result or the top of a history.
type position struct {
	Offset uint64 `json:"offset"`
	Epoch  string `json:"epoch"`
}

// check checks the reply to command i, {"<method>": result} or
// {"error": ...}.
func (c *apiCalls) check(t *testing.T, where string, i int, raw json.RawMessage) {
	t.Helper()
	w := c.want[i]
	var r struct {
		Publish   *position `json:"publish"`
		History   *position `json:"history"`
		Broadcast *struct {
			Responses []struct {
				Result *position          `json:"result"`
				Error  *gyreproc.APIError `json:"error"`
			} `json:"responses"`
		} `json:"broadcast"`
		Info  json.RawMessage    `json:"info"`
		Error *gyreproc.APIError `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: decode %s: %v", where, raw, err)
	}
	switch {
	case w.code != 0:
		if r.Error == nil || r.Error.Code != w.code {
			t.Errorf("%s: %s, want error %d", where, raw, w.code)
		}
	case r.Error != nil:
		t.Errorf("%s: %s failed: %v", where, w.method, r.Error)
	case w.method == "publish" && r.Publish != nil:
		c.checkPosition(t, where, w.channels[0], w.offsets[0], *r.Publish)
	case w.method == "history" && r.History != nil:
		c.checkPosition(t, where, w.channels[0], w.offsets[0], *r.History)
	case w.method == "broadcast" && r.Broadcast != nil:
		if len(r.Broadcast.Responses) != len(w.channels) {
			t.Fatalf("%s: broadcast to %d channels answered %d responses", where, len(w.channels), len(r.Broadcast.Responses))
		}
		for k, resp := range r.Broadcast.Responses {
			if resp.Error != nil || resp.Result == nil {
				t.Errorf("%s: broadcast into %s failed: %v", where, w.channels[k], resp.Error)
				continue
			}
			c.checkPosition(t, where, w.channels[k], w.offsets[k], *resp.Result)
		}
	case w.method == "info" && r.Info != nil:
	default:
		t.Errorf("%s: %s, want a %s reply", where, raw, w.method)
	}
}

func (c *apiCalls) checkPosition(t *testing.T, where, ch string, want uint64, p position) {
	t.Helper()
	if p.Offset != want {
		t.Errorf("%s: %s at offset %d, want %d", where, ch, p.Offset, want)
	}
	if e := c.s.epochs[ch]; p.Epoch != e {
		t.Errorf("%s: %s in epoch %q, want %q", where, ch, p.Epoch, e)
	}
}

// checkDelivered waits until c has the publications of s in each channel
// and checks it got each once, at offsets 1, 2, ...
func checkDelivered(t *testing.T, c *wstest.Client, s *streams, channels []string) {
	t.Helper()
	for _, ch := range channels {
		want := s.data[ch]
		// Not c.WaitPubs: its limit starts again with every message the
		// client gets, server pings included, so a missing publication
		// would hang the test instead of failing it.
		var pubs []*protocol.Publication
		eventually(t, fmt.Sprintf("%d publications in %s", len(want), ch), waitLimit, func() bool {
			pubs = c.Pubs(ch)
			return len(pubs) >= len(want)
		})
		var got []string
		for _, p := range pubs {
			got = append(got, string(p.Data))
		}
		if d := firstDifference(got, want); d >= 0 {
			t.Errorf("%s: node A delivered %d publications, want %d; the first difference is at %d: %s",
				ch, len(got), len(want), d, pair(got, want, d))
		}
		for i, p := range pubs {
			if p.Offset != uint64(i+1) {
				t.Errorf("%s: node A delivered publication %d (%s) at offset %d", ch, i, p.Data, p.Offset)
				break
			}
		}
	}
}

// checkHistory checks that the history of each channel on n is the
// publications of s, at offsets 1, 2, ..., in the channel's epoch.
func checkHistory(t *testing.T, n *gyreproc.Node, s *streams, channels []string) {
	t.Helper()
	for _, ch := range channels {
		var h struct {
			Publications []struct {
				Data   json.RawMessage `json:"data"`
				Offset uint64          `json:"offset"`
			} `json:"publications"`
			position
		}
		n.MustCall(t, "history", map[string]any{"channel": ch, "limit": -1}, &h)
		var got []string
		for i, p := range h.Publications {
			got = append(got, string(p.Data))
			if p.Offset != uint64(i+1) {
				t.Errorf("history of %s on node %s: publication %d (%s) at offset %d", ch, n.Name, i, p.Data, p.Offset)
			}
		}
		want := s.data[ch]
		if d := firstDifference(got, want); d >= 0 {
			t.Errorf("history of %s on node %s: %d publications, want %d; the first difference is at %d: %s",
				ch, n.Name, len(got), len(want), d, pair(got, want, d))
		}
		if h.Offset != uint64(len(want)) || h.Epoch != s.epochs[ch] {
			t.Errorf("history of %s on node %s: top %d in epoch %q, want %d in %q", ch, n.Name, h.Offset, h.Epoch, len(want), s.epochs[ch])
		}
	}
}

// firstDifference is the first index where got and want differ, or -1.
func firstDifference(got, want []string) int {
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			return i
		}
	}
	return -1
}

// pair shows got[i] and want[i], either of which may be missing.
func pair(got, want []string, i int) string {
	at := func(s []string) string {
		if i < len(s) {
			return s[i]
		}
		return "(none)"
	}
	return fmt.Sprintf("got %s, want %s", at(got), at(want))
}
