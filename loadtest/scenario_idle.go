package loadtest

import (
	"context"
	"fmt"
	"time"
)

// idle opens the connections, holds them for the duration and reports
// what they cost the server at rest.
func (r *run) idle(ctx context.Context) (*Result, error) {
	srv := r.server()
	before := srv.snap()
	if err := r.startWorkers(ctx, r.spec()); err != nil {
		return nil, err
	}
	opened := r.waitOpen(ctx)
	afterOpen := srv.snap()
	r.ready(opened)
	cpu0 := r.clientCPU()
	holdStart := time.Now()
	r.prog.set(func(time.Duration) string {
		s := r.stats()
		line := fmt.Sprintf("holding  open %s  dropped %s", count(s.Opened-s.Dropped+s.Reconnected), count(s.Dropped))
		if r.cfg.Reconnect {
			line += "  reconnected " + count(s.Reconnected)
		}
		if now := srv.snap(); now != nil {
			line += "  server RSS " + bytesIEC(float64(now.sum().RSS))
		}
		return line
	})
	if opened.Opened > 0 {
		sleep(ctx, r.cfg.Duration)
	}
	hold := time.Since(holdStart).Seconds()
	end := srv.snap()
	clientCPU := r.clientCPU() - cpu0
	m, err := r.finishWorkers(nil)
	res := r.result(m)
	res.Client = ClientResult{CPUSeconds: clientCPU, CPUPercent: percent(clientCPU, hold)}
	res.Server = srv.result(serverMoments{before: before, afterOpen: afterOpen, end: end, cpu0: afterOpen, cpu1: end, seconds: hold})
	if res.Server != nil {
		res.Server.RSSPerConn = perConn(res.Server.RSSEnd-res.Server.RSSBefore, m.Opened)
	}
	return res, err
}

// ready says, with Reconnect, that every connection was tried: the
// moment for a script to take a node down.
func (r *run) ready(s workerStats) {
	if r.cfg.Reconnect {
		r.prog.note(fmt.Sprintf("ready: %s of %s connections open", count(s.Opened), count(r.cfg.Conns)))
	}
}

func percent(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}

func perConn(bytes, conns int64) float64 {
	if conns <= 0 {
		return 0
	}
	return float64(bytes) / float64(conns)
}

func microsPer(seconds float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return seconds * 1e6 / float64(n)
}
