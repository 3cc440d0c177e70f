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
	before, watched := srv.sample()
	if err := r.startWorkers(ctx, r.spec()); err != nil {
		return nil, err
	}
	opened := r.waitOpen(ctx)
	afterOpen, _ := srv.sample()
	cpu0 := r.clientCPU()
	holdStart := time.Now()
	r.prog.set(func(time.Duration) string {
		s := r.stats()
		line := fmt.Sprintf("holding  open %s  dropped %s", count(s.Opened-s.Dropped), count(s.Dropped))
		if now, ok := srv.sample(); ok {
			line += "  server RSS " + bytesIEC(float64(now.RSS))
		}
		return line
	})
	if opened.Opened > 0 {
		sleep(ctx, r.cfg.Duration)
	}
	hold := time.Since(holdStart).Seconds()
	end, _ := srv.sample()
	clientCPU := r.clientCPU() - cpu0
	m, err := r.finishWorkers(nil)
	res := r.result(m)
	res.Client = ClientResult{CPUSeconds: clientCPU, CPUPercent: percent(clientCPU, hold)}
	if watched {
		cpu := (end.CPU - afterOpen.CPU).Seconds()
		sr := srv.newResult()
		sr.RSSBefore, sr.RSSAfterOpen, sr.RSSEnd = before.RSS, afterOpen.RSS, end.RSS
		sr.RSSPerConn = perConn(end.RSS-before.RSS, m.Opened)
		sr.CPUSeconds, sr.CPUPercent = cpu, percent(cpu, hold)
		res.Server = sr
	}
	return res, err
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
