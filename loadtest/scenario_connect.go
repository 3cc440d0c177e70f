package loadtest

import (
	"context"
	"time"
)

// connect opens connections as fast as Concurrency (or Rate) allows and
// reports the rate, the latency and the failures; a token check is part
// of every connect.
func (r *run) connect(ctx context.Context) (*Result, error) {
	srv := r.server()
	before := srv.snap()
	spec := r.spec()
	spec.Rate = r.cfg.Rate
	spec.OpenWithin = r.cfg.Duration
	cpu0 := r.clientCPU()
	start := time.Now()
	if err := r.startWorkers(ctx, spec); err != nil {
		return nil, err
	}
	r.waitOpen(ctx)
	took := time.Since(start).Seconds()
	after := srv.snap()
	clientCPU := r.clientCPU() - cpu0
	m, err := r.finishWorkers(nil)
	res := r.result(m)
	res.Client = ClientResult{CPUSeconds: clientCPU, CPUPercent: percent(clientCPU, took)}
	res.Server = srv.result(serverMoments{before: before, afterOpen: after, end: after, cpu0: before, cpu1: after, seconds: took})
	if sr := res.Server; sr != nil {
		sr.RSSPerConn = perConn(sr.RSSAfterOpen-sr.RSSBefore, m.Opened)
		sr.CPUPerConnectMicros = microsPer(sr.CPUSeconds, m.Opened)
	}
	return res, err
}
