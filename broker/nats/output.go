package nats

import (
	"github.com/gyrehq/gyre/broker"
)

// output collects, in order, what a worker hands the engine for one
// batch: runs of publications, join and leave events, and losses. A loss
// or an event ends the runs before it, so that the engine sees everything
// in the order it happened.
type output struct {
	steps []step
	runs  []broker.Run
}

type step struct {
	runs     []broker.Run
	join     bool
	event    *eventStep
	channels []string // lost
	scopes   []string // lost
}

type eventStep struct {
	channel string
	info    *broker.ClientInfo
}

// add appends rp to the last run when it is of the same channel and path,
// else starts a run.
func (o *output) add(r broker.Run, rp broker.RunPublication) {
	if n := len(o.runs); n > 0 {
		last := &o.runs[n-1]
		if last.Channel == r.Channel && last.Scope == r.Scope && last.Pattern == r.Pattern {
			last.Pubs = append(last.Pubs, rp)
			return
		}
	}
	r.Pubs = []broker.RunPublication{rp}
	o.runs = append(o.runs, r)
}

func (o *output) endRuns() {
	if len(o.runs) > 0 {
		o.steps = append(o.steps, step{runs: o.runs})
		o.runs = nil
	}
}

func (o *output) event(join bool, channel string, info *broker.ClientInfo) {
	o.endRuns()
	o.steps = append(o.steps, step{join: join, event: &eventStep{channel, info}})
}

func (o *output) lost(channels, scopes []string) {
	if len(channels) == 0 && len(scopes) == 0 {
		return
	}
	o.endRuns()
	o.steps = append(o.steps, step{channels: channels, scopes: scopes})
}

// flush hands everything collected to the engine, in order.
func (o *output) flush(b *Broker) {
	o.endRuns()
	for i := range o.steps {
		s := &o.steps[i]
		switch {
		case s.runs != nil:
			if err := b.h.HandleRuns(s.runs); err != nil {
				b.cfg.Logger.Error("nats broker: handle publications", "error", err)
			}
		case s.event != nil && s.join:
			_ = b.h.HandleJoin(s.event.channel, s.event.info)
		case s.event != nil:
			_ = b.h.HandleLeave(s.event.channel, s.event.info)
		default:
			b.reportLost(s.channels, s.scopes)
		}
		o.steps[i] = step{}
	}
	o.steps = o.steps[:0]
}

// reportLost tells the engine which channels and pattern scopes may have
// missed publications.
func (b *Broker) reportLost(channels, scopes []string) {
	if len(channels) > 0 {
		if b.lost != nil {
			_ = b.lost.HandleSubscriptionLost(channels)
		}
		b.cfg.Logger.Warn("nats broker: channels may have missed publications; their recoverable subscribers are told", "channels", len(channels))
	}
	if len(scopes) > 0 {
		if b.scopesLost != nil {
			_ = b.scopesLost.HandlePatternScopeLost(scopes)
		}
		b.cfg.Logger.Warn("nats broker: pattern scopes may have missed publications; their subscribers are told", "scopes", len(scopes))
	}
}
