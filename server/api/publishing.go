package api

import (
	"slices"
	"sync"

	"github.com/gyrehq/gyre"
)

// publishGroup gathers the publications of consecutive publish and
// broadcast commands of a batch (or of one broadcast), to be published in
// one gyre.Node.PublishMany: pipelined to Redis, and each connection woken
// once for all of them.
type publishGroup struct {
	items []gyre.PublishItem
	// from[k] is the command items[k] comes from.
	from []itemSource
	// broadcasts are the broadcast commands of the group.
	broadcasts []pendingBroadcast
}

// itemSource is the command an item comes from: reply is its place in the
// batch; for a broadcast, broadcast is its index in
// publishGroup.broadcasts and response the channel's place in the result,
// else broadcast is -1.
type itemSource struct {
	reply, broadcast, response int
}

// pendingBroadcast is a broadcast command, the reply-th of the batch, and
// its result as it is filled in.
type pendingBroadcast struct {
	reply  int
	result BroadcastResult
	// results holds what the responses point to, made in one piece.
	results []PublishResult
}

// add checks command c, the i-th of the batch, a publish or a broadcast,
// and adds it to the group, its publications carrying trace context tc.
func (g *publishGroup) add(e *Executor, i int, c *Command, tc []byte) error {
	if r, ok := c.req.(*PublishRequest); ok {
		if g.items == nil {
			// Room for what a batch of publishes holds, grown as needed
			// beyond: growing from nothing cost the API a seventh of what
			// it allocated for batches of 100.
			g.items = make([]gyre.PublishItem, 0, 256)
			g.from = make([]itemSource, 0, 256)
		}
		item, err := e.publishItem(r, tc)
		if err != nil {
			return err
		}
		g.items = append(g.items, item)
		g.from = append(g.from, itemSource{reply: i, broadcast: -1})
		return nil
	}
	items, err := e.broadcastItems(c.req.(*BroadcastRequest), tc)
	if err != nil {
		return err
	}
	g.addBroadcast(i, items)
	return nil
}

// addBroadcast adds the items of a broadcast, the i-th command. items,
// from broadcastItems, belongs to the group from then on.
func (g *publishGroup) addBroadcast(i int, items []gyre.PublishItem) {
	bi := len(g.broadcasts)
	res := BroadcastResult{Responses: make([]PublishResponse, len(items))}
	g.broadcasts = append(g.broadcasts, pendingBroadcast{reply: i, result: res, results: make([]PublishResult, len(items))})
	adopted := len(g.items) == 0
	if adopted {
		// The group's items are the broadcast's, kept in its array
		// (each item moves to a place at or before its own): items are
		// a few hundred bytes each, and a copy of a broadcast's
		// thousands was half of what the server allocated for it.
		putItems(g.items)
		g.items = items[:0]
	}
	g.from = slices.Grow(g.from, len(items))
	for k, it := range items {
		if it.Err != nil {
			res.Responses[k].Error = it.Err.(*Error) // broadcastItems sets only those
			continue
		}
		g.items = append(g.items, it)
		g.from = append(g.from, itemSource{reply: i, broadcast: bi, response: k})
	}
	if adopted {
		// What the refused items left behind the group's must not
		// stay alive in the pool.
		clear(items[len(g.items):])
	} else {
		clear(items)
		putItems(items)
	}
}

// publish publishes the group, sets the replies of its commands and
// empties it.
func (g *publishGroup) publish(e *Executor, replies []Reply) {
	if len(g.items) > 0 {
		e.node.PublishMany(g.items)
	}
	for k, src := range g.from {
		it := &g.items[k]
		switch {
		case src.broadcast < 0 && it.Err != nil:
			replies[src.reply].Error = e.failed("publish", it.Channel, it.Err)
		case src.broadcast < 0:
			replies[src.reply] = Reply{Method: "publish", Result: toPublishResult(it.Result)}
		case it.Err != nil:
			g.broadcasts[src.broadcast].result.Responses[src.response].Error = e.failed("broadcast", it.Channel, it.Err)
		default:
			b := &g.broadcasts[src.broadcast]
			b.results[src.response] = toPublishResult(it.Result)
			b.result.Responses[src.response].Result = &b.results[src.response]
		}
	}
	for _, b := range g.broadcasts {
		replies[b.reply] = Reply{Method: "broadcast", Result: b.result}
	}
	// The next stretch reuses the room; nothing of this one stays alive.
	clear(g.items)
	g.items, g.from, g.broadcasts = g.items[:0], g.from[:0], nil
}

// release gives the group's item array back for other calls.
func (g *publishGroup) release() {
	putItems(g.items)
	g.items = nil
}

// itemArrays holds item arrays between broadcasts: a broadcast to 5,000
// channels needs a megabyte of them.
var itemArrays sync.Pool

// getItems returns an empty item slice with room for n.
func getItems(n int) []gyre.PublishItem {
	if p, ok := itemArrays.Get().(*[]gyre.PublishItem); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]gyre.PublishItem, 0, n)
}

// putItems keeps the array of items, which must be cleared, for
// getItems; small ones are not worth it.
func putItems(items []gyre.PublishItem) {
	if cap(items) >= 64 {
		items = items[:0]
		itemArrays.Put(&items)
	}
}
