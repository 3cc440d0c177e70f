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
	before, watched := srv.sample()
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
	after, _ := srv.sample()
	clientCPU := r.clientCPU() - cpu0
	m, err := r.finishWorkers(nil)
	res := r.result(m)
	res.Client = ClientResult{CPUSeconds: clientCPU, CPUPercent: percent(clientCPU, took)}
	if watched {
		cpu := (after.CPU - before.CPU).Seconds()
		sr := srv.newResult()
		sr.RSSBefore, sr.RSSAfterOpen, sr.RSSEnd = before.RSS, after.RSS, after.RSS
		sr.RSSPerConn = perConn(after.RSS-before.RSS, m.Opened)
		sr.CPUSeconds, sr.CPUPercent = cpu, percent(cpu, took)
		sr.CPUPerConnectMicros = microsPer(cpu, m.Opened)
		res.Server = sr
	}
	return res, err
}
