package gyre

import "github.com/gyrehq/gyre/protocol"

// subscribePush tells a client it was subscribed server-side.
func subscribePush(channel string, res *protocol.SubscribeResult) *protocol.Push {
	return &protocol.Push{Channel: channel, Subscribe: &protocol.Subscribe{
		Recoverable: res.Recoverable,
		Epoch:       res.Epoch,
		Offset:      res.Offset,
		Positioned:  res.Positioned,
		Data:        res.Data,
	}}
}
