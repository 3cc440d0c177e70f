package loadtest

import (
	"context"
	"fmt"
	"time"
)

// churn keeps about Conns connections coming and going over the nodes
// for the duration: each connects with its user's token, subscribes to
// a channel picked at random, stays, and leaves, and another takes its
// place. It reports the rates of connects, subscribes and disconnects,
// their latencies and failures, and each node's CPU time over the whole
// run: what connection and subscription churn costs a cluster, the
// server's hooks on connects, subscribes and disconnects included.
func (r *run) churn(ctx context.Context) (*Result, error) {
	srv := r.server()
	before := srv.snap()
	self0, _ := selfCPU()
	spec := r.spec()
	spec.Rate = r.cfg.Rate
	start := time.Now()
	if err := r.startWorkers(ctx, spec); err != nil {
		return nil, err
	}
	workers := r.currentWorkers()
	meters := [2]*rateMeter{newRateMeter(), newRateMeter()}
	r.prog.set(churnLine("churning", workers, meters))
	sleep(ctx, r.cfg.Duration)
	r.prog.set(churnLine("leaving", workers, meters))
	m, err := r.finishWorkers(nil)
	took := time.Since(start).Seconds()
	after := srv.snap()
	self1, _ := selfCPU()
	res := r.result(m)
	res.Connections.Subs = 1
	clientCPU := (self1 - self0).Seconds() + m.CPUSeconds
	res.Client = ClientResult{CPUSeconds: clientCPU, CPUPercent: percent(clientCPU, took)}
	res.Churn = r.churnResult(m)
	// No moment of churn has every connection open: no RSS after
	// connecting.
	res.Server = srv.result(serverMoments{before: before, end: after, cpu0: before, cpu1: after, seconds: took})
	if sr := res.Server; sr != nil {
		for i := range res.Churn.Nodes {
			node := (after[i].CPU - before[i].CPU).Seconds()
			res.Churn.Nodes[i].CPUSeconds = node
			res.Churn.Nodes[i].CPUPercent = percent(node, took)
		}
		sr.CPUPerSubscribeMicros = microsPer(sr.CPUSeconds, res.Churn.Subscribes)
		sr.CPUPerDisconnectMicros = microsPer(sr.CPUSeconds, res.Churn.Disconnects)
	}
	return res, err
}

// churnLine is the progress line of a phase of churn, with the rates of
// connects and disconnects from meters, which go on from one phase to
// the next. It asks the workers themselves, which the run forgets while
// they finish.
func churnLine(phase string, workers []worker, meters [2]*rateMeter) func(time.Duration) string {
	connects, disconnects := meters[0], meters[1]
	return func(time.Duration) string {
		var t ChurnCounts
		for _, w := range workers {
			for _, c := range w.stats().Churn {
				t.add(c)
			}
		}
		return fmt.Sprintf("%s  open %s  connects %s (%s/s)  subscribes %s  disconnects %s (%s/s)  failed %s",
			phase, count(t.Connects-t.Disconnects-t.Dropped), count(t.Connects), countf(connects.rate(t.Connects)),
			count(t.Subscribes), count(t.Disconnects), countf(disconnects.rate(t.Disconnects)), count(t.failures()))
	}
}

// churnResult sums the workers' counts up, per node and in all.
func (r *run) churnResult(m *merged) *ChurnResult {
	c := &ChurnResult{
		Conns:            r.cfg.Conns,
		Users:            r.cfg.Users,
		Channels:         r.cfg.Channels,
		HoldSeconds:      r.cfg.Hold.Seconds(),
		TargetRate:       r.cfg.Rate,
		Unsubscribe:      r.cfg.Unsubscribe,
		ConnectLatency:   m.connLat.percentiles(),
		SubscribeLatency: m.subLat.percentiles(),
	}
	for i, u := range r.cfg.urls {
		n := NodeChurn{URL: u}
		if i < len(m.Churn) {
			n.ChurnCounts = m.Churn[i]
		}
		if i < len(r.cfg.PIDs) {
			n.PID = r.cfg.PIDs[i]
		}
		c.add(n.ChurnCounts)
		c.Nodes = append(c.Nodes, n)
	}
	if d := time.Duration(m.openEnd - m.openStart); d > 0 && m.openStart > 0 {
		c.Seconds = d.Seconds()
		c.ConnectsPerSecond = float64(c.Connects) / c.Seconds
		c.SubscribesPerSecond = float64(c.Subscribes) / c.Seconds
		c.DisconnectsPerSecond = float64(c.Disconnects) / c.Seconds
	}
	return c
}
