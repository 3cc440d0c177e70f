package maptest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/suitekit"
)

// Map options the tests use: each mode with limits no test reaches unless
// it means to.
var (
	persistent  = broker.MapOptions{Mode: broker.MapModePersistent, StreamSize: 1000, StreamTTL: time.Hour}
	recoverable = broker.MapOptions{Mode: broker.MapModeRecoverable, KeyTTL: time.Hour, StreamSize: 1000, StreamTTL: time.Hour, MetaTTL: 10 * time.Hour}
	ephemeral   = broker.MapOptions{Mode: broker.MapModeEphemeral, KeyTTL: time.Hour}
)

// eachMode runs f as a subtest per mode.
func eachMode(t *testing.T, f func(t *testing.T, mo broker.MapOptions)) {
	for _, mo := range []broker.MapOptions{persistent, recoverable, ephemeral} {
		t.Run(mo.Mode.String(), func(t *testing.T) { f(t, mo) })
	}
}

// eachStreamMode runs f as a subtest per mode that keeps a stream.
func eachStreamMode(t *testing.T, f func(t *testing.T, mo broker.MapOptions)) {
	for _, mo := range []broker.MapOptions{persistent, recoverable} {
		t.Run(mo.Mode.String(), func(t *testing.T) { f(t, mo) })
	}
}

// eachExpiringMode runs f as a subtest per mode whose keys expire, with
// KeyTTL set to ttl.
func eachExpiringMode(t *testing.T, ttl time.Duration, f func(t *testing.T, mo broker.MapOptions)) {
	for _, mo := range []broker.MapOptions{recoverable, ephemeral} {
		mo.KeyTTL = ttl
		t.Run(mo.Mode.String(), func(t *testing.T) { f(t, mo) })
	}
}

// uniqueChannel names a channel no other subtest (or earlier run against a
// shared backend) uses.
func uniqueChannel(t testing.TB) string { return suitekit.UniqueChannel(t, "maptest") }

var eventually = suitekit.Eventually

// env is what a test works with: the first node, and the means to make
// more when the broker declared a shared backend.
type env struct {
	*node
	t         *testing.T
	opts      options
	newBroker func(t *testing.T) broker.MapBroker
}

// node is a running broker with its recorder, closed when the subtest
// ends.
type node struct {
	b   broker.MapBroker
	rec *recorder
}

func newEnv(t *testing.T, newBroker func(t *testing.T) broker.MapBroker, o options) *env {
	t.Helper()
	e := &env{t: t, opts: o, newBroker: newBroker}
	e.node = e.newNode()
	return e
}

// newNode makes a broker, runs it with a recorder, and closes it when the
// subtest ends; the recorder's contract checks run after that.
func (e *env) newNode() *node {
	e.t.Helper()
	n := &node{b: e.newBroker(e.t), rec: newRecorder()}
	e.t.Cleanup(func() { n.rec.checkContract(e.t) })
	if err := n.b.Run(n.rec); err != nil {
		e.t.Fatalf("Run: %v", err)
	}
	e.t.Cleanup(func() {
		if err := n.b.Close(); err != nil {
			e.t.Errorf("Close: %v", err)
		}
	})
	return n
}

// secondNode returns another node of the deployment, skipping the test
// when the broker did not declare a shared backend.
func (e *env) secondNode(t *testing.T) *node {
	t.Helper()
	if !e.opts.sharedBackend {
		t.Skip("the broker's instances do not share a backend")
	}
	return e.newNode()
}

// channel returns a fresh channel this node is subscribed to.
func (n *node) channel(t testing.TB) string {
	t.Helper()
	ch := uniqueChannel(t)
	n.subscribe(t, ch)
	return ch
}

func (n *node) subscribe(t testing.TB, ch string) {
	t.Helper()
	if err := n.b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe(%q): %v", ch, err)
	}
}

func (n *node) unsubscribe(t testing.TB, ch string) {
	t.Helper()
	if err := n.b.Unsubscribe(ch); err != nil {
		t.Fatalf("Unsubscribe(%q): %v", ch, err)
	}
}

// publish calls Publish and fails the test on an error.
func (n *node) publish(t testing.TB, ch, key string, opts broker.MapPublishOptions) broker.MapUpdateResult {
	t.Helper()
	res, err := n.b.Publish(t.Context(), ch, key, opts)
	if err != nil {
		t.Fatalf("Publish(%q, %q): %v", ch, key, err)
	}
	return res
}

// write publishes data into key and fails the test unless it changed the
// state; it returns the change's position.
func (n *node) write(t testing.TB, ch, key, data string, mo broker.MapOptions) broker.StreamPosition {
	t.Helper()
	return n.written(t, ch, key, broker.MapPublishOptions{Map: mo, Data: []byte(data)})
}

// written publishes with opts and fails the test unless it changed the
// state.
func (n *node) written(t testing.TB, ch, key string, opts broker.MapPublishOptions) broker.StreamPosition {
	t.Helper()
	res := n.publish(t, ch, key, opts)
	if res.Suppressed {
		t.Fatalf("Publish(%q, %q) suppressed (%q)", ch, key, res.SuppressReason)
	}
	return res.Position
}

// remove calls Remove and fails the test on an error.
func (n *node) remove(t testing.TB, ch, key string, opts broker.MapRemoveOptions) broker.MapUpdateResult {
	t.Helper()
	res, err := n.b.Remove(t.Context(), ch, key, opts)
	if err != nil {
		t.Fatalf("Remove(%q, %q): %v", ch, key, err)
	}
	return res
}

// removed removes key and fails the test unless it changed the state.
func (n *node) removed(t testing.TB, ch, key string, mo broker.MapOptions) broker.StreamPosition {
	t.Helper()
	res := n.remove(t, ch, key, broker.MapRemoveOptions{Map: mo})
	if res.Suppressed {
		t.Fatalf("Remove(%q, %q) suppressed (%q)", ch, key, res.SuppressReason)
	}
	return res.Position
}

// state calls ReadState and fails the test on an error.
func (n *node) state(t testing.TB, ch string, opts broker.MapStateOptions) broker.MapStateResult {
	t.Helper()
	res, err := n.b.ReadState(t.Context(), ch, opts)
	if err != nil {
		t.Fatalf("ReadState(%q, %+v): %v", ch, opts, err)
	}
	return res
}

// allState pages through the whole state with pages of limit and returns
// the entries in the order they came, failing the test when the pages
// run on far longer than the state could need.
func (n *node) allState(t testing.TB, ch string, mo broker.MapOptions, limit int) []*broker.Publication {
	t.Helper()
	var all []*broker.Publication
	cursor := ""
	for pages := 0; ; pages++ {
		res := n.state(t, ch, broker.MapStateOptions{Map: mo, Cursor: cursor, Limit: limit})
		all = append(all, res.Entries...)
		if res.Cursor == "" {
			return all
		}
		if pages > 100000 {
			t.Fatalf("ReadState of %s still hands out cursors after %d pages", ch, pages)
		}
		cursor = res.Cursor
	}
}

// stream calls ReadStream and fails the test on an error.
func (n *node) stream(t testing.TB, ch string, mo broker.MapOptions, f broker.HistoryFilter) broker.MapStreamResult {
	t.Helper()
	res, err := n.b.ReadStream(t.Context(), ch, broker.MapStreamOptions{Map: mo, Filter: f})
	if err != nil {
		t.Fatalf("ReadStream(%q, %+v): %v", ch, f, err)
	}
	return res
}

// top reads the channel's stream top.
func (n *node) top(t testing.TB, ch string, mo broker.MapOptions) broker.StreamPosition {
	t.Helper()
	return n.stream(t, ch, mo, broker.HistoryFilter{}).Position
}

func (n *node) stats(t testing.TB, ch string) int {
	t.Helper()
	s, err := n.b.Stats(t.Context(), ch)
	if err != nil {
		t.Fatalf("Stats(%q): %v", ch, err)
	}
	return s.NumKeys
}

func (n *node) clear(t testing.TB, ch string) {
	t.Helper()
	if err := n.b.Clear(t.Context(), ch); err != nil {
		t.Fatalf("Clear(%q): %v", ch, err)
	}
}

// marker writes a key no test uses otherwise and waits until this node
// receives it; it returns the channel's deliveries before the marker. A
// change that has not arrived by then was not delivered: per channel,
// changes arrive in offset order.
func (n *node) marker(t testing.TB, ch string, mo broker.MapOptions) []delivery {
	t.Helper()
	return n.markerSeenBy(t, ch, mo, n)[0]
}

// markerSeenBy is marker with the marker awaited by each of nodes: it
// returns, per node, the deliveries before the marker.
func (n *node) markerSeenBy(t testing.TB, ch string, mo broker.MapOptions, nodes ...*node) [][]delivery {
	t.Helper()
	key := fmt.Sprintf("marker-%d", suitekit.Seq())
	n.write(t, ch, key, "marker", mo)
	out := make([][]delivery, len(nodes))
	for i, nd := range nodes {
		ds := nd.rec.waitKey(t, ch, key, false)
		out[i] = ds[:len(ds)-1]
	}
	return out
}

// wantSuppressed fails the test unless res is suppressed for reason at
// position at.
func wantSuppressed(t testing.TB, what string, res broker.MapUpdateResult, reason broker.SuppressReason, at broker.StreamPosition) {
	t.Helper()
	if !res.Suppressed || res.SuppressReason != reason || res.Position != at {
		t.Errorf("%s: suppressed %v (%q) at %+v; want suppressed (%q) at %+v", what, res.Suppressed, res.SuppressReason, res.Position, reason, at)
	}
}

// wantErr fails the test unless err is target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", what, err, target)
	}
}

func keys(pubs []*broker.Publication) []string {
	out := make([]string, 0, len(pubs))
	for _, p := range pubs {
		out = append(out, p.Key)
	}
	return out
}

var (
	offsets = suitekit.Offsets
	span    = suitekit.Span
)

// changes describes changes as "key=data" and "-key" for removals.
func changes(pubs []*broker.Publication) []string {
	out := make([]string, 0, len(pubs))
	for _, p := range pubs {
		out = append(out, describe(*p))
	}
	return out
}

func deliveredChanges(ds []delivery) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, describe(d.pub))
	}
	return out
}

func describe(p broker.Publication) string {
	if p.Removed {
		return "-" + p.Key
	}
	return p.Key + "=" + string(p.Data)
}

// checkOffsets fails the test unless pubs carry offsets want, in order.
func checkOffsets(t testing.TB, what string, pubs []*broker.Publication, want ...uint64) {
	t.Helper()
	if got := offsets(pubs); !slices.Equal(got, want) {
		t.Errorf("%s: offsets %v, want %v", what, got, want)
	}
}

// sortByKey sorts pubs by key, for brokers whose pages come in an order
// of their own, and returns them.
func sortByKey(pubs []*broker.Publication) []*broker.Publication {
	slices.SortFunc(pubs, func(a, b *broker.Publication) int { return strings.Compare(a.Key, b.Key) })
	return pubs
}
