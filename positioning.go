package gyre

import (
	"context"
	"log/slog"

	"github.com/gyrehq/gyre/broker"
)

// checkPositions verifies, for every positioned subscription, that the
// client has not lost publications: its epoch must still be the stream's,
// and it must have received at least what was the stream top at the
// previous check (what was published since may still be on its way). A
// subscriber that fails is unsubscribed with 2500 so that it resubscribes
// and recovers.
func (n *Node) checkPositions() {
	tops := make(map[string]broker.StreamPosition)
	n.hub.allClients(func(c *Client) {
		c.mu.Lock()
		var subs []*subscription
		for _, s := range c.subs {
			if s.positioned && s.state.Load() == subActive {
				subs = append(subs, s)
			}
		}
		c.mu.Unlock()
		for _, s := range subs {
			top, ok := tops[s.channel]
			if !ok {
				sp, err := n.streamTop(s)
				if err != nil {
					n.logBrokerFailure("history", slog.LevelWarn, "position check: stream top", "channel", s.channel, "error", err)
					continue
				}
				top = sp
				tops[s.channel] = top
			}
			lost := top.Epoch != s.epoch || s.offset.Load() < s.checkedTop
			s.checkedTop = top.Offset
			if lost {
				n.log.Info("subscriber lost its position", "client", c.id, "channel", s.channel,
					"offset", s.offset.Load(), "epoch", s.epoch, "stream_epoch", top.Epoch)
				c.Unsubscribe(s.channel, UnsubscribeCodeInsufficientState, "insufficient state")
			}
		}
	})
}

// streamTop reads the top of the stream s follows: its channel's history,
// or a map channel's stream of changes.
func (n *Node) streamTop(s *subscription) (broker.StreamPosition, error) {
	if s.isMap {
		res, err := n.mapBroker.ReadStream(context.Background(), s.channel, broker.MapStreamOptions{Map: s.opts.Map.brokerOptions()})
		return res.Position, err
	}
	_, sp, err := n.broker.History(s.channel, broker.HistoryOptions{MetaTTL: s.opts.HistoryMetaTTL})
	return sp, err
}
