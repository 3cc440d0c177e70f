package gyre_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/delta/fossil"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// Map subscription types and phases as the protocol numbers them.
const (
	typeMap        int32 = 1
	typeMapClients int32 = 2
	typeMapUsers   int32 = 3

	phaseLive   int32 = 0
	phaseStream int32 = 1
	phaseState  int32 = 2
)

// mapNS is a map namespace of mode, open to every client, with pages
// from 10 entries so that tests page through small states.
func mapNS(name string, mode gyre.MapMode, o ...func(*gyre.ChannelOptions)) gyre.Namespace {
	opts := gyre.ChannelOptions{
		SubscriptionType:        gyre.SubscriptionTypeMap,
		AllowSubscribeForClient: true,
		AllowTagsFilter:         true,
		AllowedDeltaTypes:       []string{"fossil"},
		AllowChannelCompaction:  true,
		Map:                     gyre.MapChannelOptions{Mode: mode, MinPageSize: 10},
	}
	if mode.HasExpiry() {
		opts.Map.KeyTTL = time.Minute
	}
	if mode.HasStream() {
		// Room for what the tests change while a subscriber pages.
		opts.Map.StreamSize = 5000
	}
	for _, f := range o {
		f(&opts)
	}
	return gyre.Namespace{Name: name, ChannelOptions: opts}
}

// mapModes are the namespaces of mapConfig, one per mode.
var mapModes = []struct {
	ns   string
	mode gyre.MapMode
}{{"eph", gyre.MapModeEphemeral}, {"rec", gyre.MapModeRecoverable}, {"per", gyre.MapModePersistent}}

// mapConfig has a map namespace per mode (see mapModes) and the
// namespaces extra.
func mapConfig(extra ...gyre.Namespace) gyre.Config {
	var nss []gyre.Namespace
	for _, m := range mapModes {
		nss = append(nss, mapNS(m.ns, m.mode))
	}
	return gyre.Config{Channels: gyre.ChannelConfig{Namespaces: append(nss, extra...)}}
}

// eachMapEngine runs fn on every engine with a MapBroker, for both wire
// formats, with a node of cfg and a connected client of user "u1".
func eachMapEngine(t *testing.T, cfg gyre.Config, setup func(*gyre.Node), fn func(t *testing.T, n *gyre.Node, c *testClient, url string)) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		n, url := newTestNodeWith(t, e.Config(t, cfg), setup)
		protocols(t, func(t *testing.T, proto protocol.Type) {
			c := dial(t, url, proto)
			c.connect(connToken(t, "u1", 0, nil))
			fn(t, n, c, url)
		})
	})
}

// mapView is what a map subscriber holds: the state built from the
// subscribe flow, then kept by the live changes.
type mapView struct {
	ch string
	// entries by key.
	entries map[string]string
	// live is the result that went live; phases the phases of the
	// results in order.
	live   *protocol.SubscribeResult
	phases []int32
	// offsets of every change applied, in order (catch-up and live).
	offsets []uint64
	// applied counts the live publications taken from the client.
	applied int
	// prev holds each key's value as sent, the base of its next delta.
	prev map[string][]byte
}

// flowOptions shape a subscribe flow.
type flowOptions struct {
	typ   int32
	limit int32
	delta string
	tf    *protocol.FilterNode
	// between is called after every state or stream page the client got.
	between func(res *protocol.SubscribeResult)
}

// mapSync drives a map subscription to live as centrifuge-js does: state
// pages by cursor, stream pages from the frozen position, until a
// result of phase live, and returns the view it built.
func mapSync(t testing.TB, c *testClient, ch string, fo flowOptions) *mapView {
	t.Helper()
	v, err := mapSyncErr(t, c, ch, fo)
	if err != nil {
		t.Fatalf("map subscribe %s: error %d %s", ch, err.Code, err.Message)
	}
	return v
}

// mapSyncErr is mapSync returning the error that ended the flow.
func mapSyncErr(t testing.TB, c *testClient, ch string, fo flowOptions) (*mapView, *protocol.Error) {
	t.Helper()
	if fo.typ == 0 {
		fo.typ = typeMap
	}
	v := &mapView{ch: ch, entries: map[string]string{}, prev: map[string][]byte{}}
	var state, stream []*protocol.Publication
	req := &protocol.SubscribeRequest{Channel: ch, Type: fo.typ, Phase: phaseState, Limit: fo.limit, Delta: fo.delta, Tf: fo.tf}
	var epoch string
	var offset uint64
	captured := false
	for range 10000 {
		r := c.Subscribe(req)
		if r.Error != nil {
			return nil, r.Error
		}
		res := r.Subscribe
		v.phases = append(v.phases, res.Phase)
		if res.Type != fo.typ {
			t.Fatalf("result type %d, want %d", res.Type, fo.typ)
		}
		switch res.Phase {
		case phaseLive:
			v.live = res
			v.apply(t, c, append(state, res.State...), res.Delta)
			v.applyChanges(t, c, append(stream, res.Publications...), res.Delta)
			return v, nil
		case phaseState:
			if !captured {
				epoch, offset, captured = res.Epoch, res.Offset, true
			}
			state = append(state, res.State...)
			next := &protocol.SubscribeRequest{Channel: ch, Type: fo.typ, Phase: phaseState, Limit: fo.limit, Cursor: res.Cursor,
				Offset: offset, Epoch: epoch, Delta: fo.delta, Tf: fo.tf}
			if res.Cursor == "" {
				next.Phase, next.Cursor = phaseStream, ""
			}
			req = next
		case phaseStream:
			stream = append(stream, res.Publications...)
			req = &protocol.SubscribeRequest{Channel: ch, Type: fo.typ, Phase: phaseStream, Limit: fo.limit, Offset: res.Offset, Epoch: epoch,
				Delta: fo.delta, Tf: fo.tf}
		default:
			t.Fatalf("result of phase %d", res.Phase)
		}
		if fo.between != nil {
			fo.between(res)
		}
	}
	t.Fatal("the flow did not go live")
	return nil, nil
}

// value is the data of a state entry or change as the application gets
// it: with delta negotiated on JSON, values travel as JSON strings.
func value(t testing.TB, c *testClient, data []byte, escaped bool) []byte {
	t.Helper()
	if !escaped || c.Protocol() != protocol.TypeJSON {
		return data
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("value %q is not a JSON string: %v", data, err)
	}
	return []byte(s)
}

// apply takes state entries into the view.
func (v *mapView) apply(t testing.TB, c *testClient, entries []*protocol.Publication, escaped bool) {
	t.Helper()
	for _, e := range entries {
		if e.Removed {
			t.Fatalf("a state entry is a removal: %v", e)
		}
		d := value(t, c, e.Data, escaped)
		v.entries[e.Key], v.prev[e.Key] = string(d), d
	}
}

// applyChanges takes changes (catch-up or live) into the view, in order,
// checking that offsets only grow.
func (v *mapView) applyChanges(t testing.TB, c *testClient, pubs []*protocol.Publication, escaped bool) {
	t.Helper()
	for _, p := range pubs {
		if n := len(v.offsets); n > 0 && p.Offset <= v.offsets[n-1] {
			t.Fatalf("change of offset %d after %d: repeated or out of order", p.Offset, v.offsets[n-1])
		}
		v.offsets = append(v.offsets, p.Offset)
		if p.Removed {
			delete(v.entries, p.Key)
			delete(v.prev, p.Key)
			continue
		}
		d := value(t, c, p.Data, escaped)
		if p.Delta {
			base, ok := v.prev[p.Key]
			if !ok {
				t.Fatalf("a delta for key %q, whose value the client does not hold", p.Key)
			}
			var err error
			if d, err = fossil.Apply(base, d); err != nil {
				t.Fatalf("delta for key %q: %v", p.Key, err)
			}
		}
		v.entries[p.Key], v.prev[p.Key] = string(d), d
	}
}

// takeLive applies the live publications the client received since the
// last call.
func (v *mapView) takeLive(t testing.TB, c *testClient) {
	t.Helper()
	pubs := c.Pubs(v.ch)
	v.applyChanges(t, c, pubs[v.applied:], v.live.Delta)
	v.applied = len(pubs)
}

// settle writes a marker key and waits until the client received its
// change, applying every live publication before it: the changes written
// before the marker came before it.
// The marker is written with o, which must let it through the client's
// filter.
func (v *mapView) settle(t testing.TB, n *gyre.Node, c *testClient, o ...func(*gyre.MapPublishOptions)) {
	t.Helper()
	marker := fmt.Sprintf("marker-%d", len(v.offsets))
	mapPut(t, n, v.ch, marker, `{}`, o...)
	c.WaitFor("the marker "+marker, func() bool {
		return slices.ContainsFunc(c.Pubs(v.ch)[v.applied:], func(p *protocol.Publication) bool { return p.Key == marker })
	})
	v.takeLive(t, c)
}

// waitLive waits until the client received n live publications in all.
func (v *mapView) waitLive(t testing.TB, c *testClient, n int) {
	t.Helper()
	c.WaitPubs(v.ch, n)
	v.takeLive(t, c)
}

// brokerState reads the whole state of channel through the node.
func brokerState(t testing.TB, n *gyre.Node, ch string) (map[string]string, gyre.StreamPosition) {
	t.Helper()
	out := map[string]string{}
	var cursor string
	for {
		res, err := n.MapReadState(context.Background(), ch, gyre.MapReadStateOptions{Cursor: cursor, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Entries {
			out[e.Key] = string(e.Data)
		}
		if cursor = res.Cursor; cursor == "" {
			return out, res.Position
		}
	}
}

// mapPut writes key with data through the node.
func mapPut(t testing.TB, n *gyre.Node, ch, key, data string, o ...func(*gyre.MapPublishOptions)) gyre.MapUpdateResult {
	t.Helper()
	opts := gyre.MapPublishOptions{Data: []byte(data)}
	for _, f := range o {
		f(&opts)
	}
	res, err := n.MapPublish(context.Background(), ch, key, opts)
	if err != nil {
		t.Fatalf("map publish %s/%s: %v", ch, key, err)
	}
	return res
}

// mapDel removes key through the node.
func mapDel(t testing.TB, n *gyre.Node, ch, key string) {
	t.Helper()
	if _, err := n.MapRemove(context.Background(), ch, key, gyre.MapRemoveOptions{}); err != nil {
		t.Fatalf("map remove %s/%s: %v", ch, key, err)
	}
}

// keyData is the JSON value of key k in version i.
func keyData(k, i int) string { return fmt.Sprintf(`{"k":%d,"v":%d}`, k, i) }

// sameEntries fails t when got and want differ, naming a few keys.
func sameEntries(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	var diff []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			diff = append(diff, fmt.Sprintf("%s: %q want %q", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, k+": not in the state")
		}
	}
	slices.Sort(diff)
	t.Fatalf("%s: %d entries, want %d; %d differ: %v", what, len(got), len(want), len(diff), diff[:min(len(diff), 5)])
}
