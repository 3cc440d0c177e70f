package api

import "github.com/gyrehq/gyre"

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
	result broadcastResult
}

// add decodes command c, the i-th of the batch, into the group.
func (g *publishGroup) add(i int, c command) error {
	if c.name == "publish" {
		item, err := decodePublish(c.body)
		if err != nil {
			return err
		}
		g.items = append(g.items, item)
		g.from = append(g.from, itemSource{reply: i, broadcast: -1})
		return nil
	}
	items, err := decodeBroadcast(c.body)
	if err != nil {
		return err
	}
	g.addBroadcast(i, items)
	return nil
}

// addBroadcast adds the items of a broadcast, the i-th command.
func (g *publishGroup) addBroadcast(i int, items []gyre.PublishItem) {
	bi := len(g.broadcasts)
	res := broadcastResult{Responses: make([]reply, len(items))}
	g.broadcasts = append(g.broadcasts, pendingBroadcast{reply: i, result: res})
	for k, it := range items {
		if it.Err != nil {
			res.Responses[k].Error = errNoChannel
			continue
		}
		g.items = append(g.items, it)
		g.from = append(g.from, itemSource{reply: i, broadcast: bi, response: k})
	}
}

// publish publishes the group, sets the replies of its commands and
// empties it.
func (g *publishGroup) publish(h *Handler, replies []batchReply) {
	if len(g.items) > 0 {
		h.node.PublishMany(g.items)
	}
	for k, src := range g.from {
		it := &g.items[k]
		switch {
		case src.broadcast < 0 && it.Err != nil:
			replies[src.reply].err = h.failed("publish", it.Channel, it.Err)
		case src.broadcast < 0:
			replies[src.reply] = batchReply{method: "publish", result: toPublishResult(it.Result)}
		case it.Err != nil:
			g.broadcasts[src.broadcast].result.Responses[src.response].Error = h.failed("broadcast", it.Channel, it.Err)
		default:
			g.broadcasts[src.broadcast].result.Responses[src.response].Result = toPublishResult(it.Result)
		}
	}
	for _, b := range g.broadcasts {
		replies[b.reply] = batchReply{method: "broadcast", result: b.result}
	}
	*g = publishGroup{}
}
