package loadtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Run runs scenario against the server cfg points at and returns its
// summary. Every scenario stops by itself (cfg.Duration, cfg.Conns);
// cancelling ctx cuts the current phase short and still returns what
// was measured.
func Run(ctx context.Context, scenario string, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults(scenario)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, scenario: scenario, start: time.Now()}
	r.prog = startProgress(cfg.Progress, r.start)
	defer r.prog.stop()
	var res *Result
	switch scenario {
	case ScenarioIdle:
		res, err = r.idle(ctx)
	case ScenarioFanout:
		res, err = r.publish(ctx, false)
	case ScenarioChannels:
		res, err = r.publish(ctx, true)
	case ScenarioConnect:
		res, err = r.connect(ctx)
	case ScenarioChurn:
		res, err = r.churn(ctx)
	}
	if res != nil {
		res.Seconds = time.Since(r.start).Seconds()
	}
	return res, err
}

// run is the state of one Run.
type run struct {
	cfg      Config
	scenario string
	start    time.Time
	prog     *progress
	errs     errorSamples

	// mu guards workers: the progress line reads them while the run
	// starts and finishes them.
	mu      sync.Mutex
	workers []worker
}

// spec is the workerSpec of the whole run, before it is split.
func (r *run) spec() workerSpec {
	c := r.cfg
	return workerSpec{
		Scenario:    r.scenario,
		URLs:        c.urls,
		Protocol:    c.Protocol,
		Compression: c.Compression,
		Token:       c.Token,
		HMACSecret:  c.HMACSecret,
		TokenTTL:    c.Duration + time.Hour,
		Count:       c.Conns,
		Subs:        c.Subs,
		Channels:    c.Channels,
		Channel:     c.Channel,
		Pattern:     c.Pattern,
		Concurrency: c.Concurrency,
		Users:       c.Users,
		Hold:        c.Hold,
		Unsubscribe: c.Unsubscribe,
		Reconnect:   c.Reconnect,
		Sources:     c.sources,
		OpenWithin:  c.Duration + 10*time.Minute,
		Lifetime:    3*c.Duration + 30*time.Minute,
	}
}

// startWorkers splits spec's connections over the workers: this process
// when cfg.Procs is 0, else that many children.
func (r *run) startWorkers(ctx context.Context, spec workerSpec) error {
	if r.cfg.Procs == 0 {
		r.addWorker(startPool(ctx, spec))
		return nil
	}
	n, first := r.cfg.Procs, spec.First
	for i := range n {
		s := spec
		s.First = first
		s.Count = spec.Count/n + btoi(i < spec.Count%n)
		s.Rate = spec.Rate / float64(n)
		first += s.Count
		c, err := startChild(r.cfg.WorkerCommand, s, r.cfg.Log)
		if err != nil {
			_, _ = r.finishWorkers(nil)
			return err
		}
		r.addWorker(c)
	}
	return nil
}

func (r *run) addWorker(w worker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workers = append(r.workers, w)
}

// takeWorkers returns the workers and forgets them.
func (r *run) takeWorkers() []worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.workers
	r.workers = nil
	return ws
}

func (r *run) currentWorkers() []worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.workers
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (r *run) stats() workerStats {
	var s workerStats
	for _, w := range r.currentWorkers() {
		s.add(w.stats())
	}
	return s
}

// clientCPU is the CPU time of this process and its children so far.
func (r *run) clientCPU() float64 {
	self, _ := selfCPU()
	return self.Seconds() + r.stats().CPUSeconds
}

// waitOpen waits until every worker has tried all its connections,
// showing how many are open.
func (r *run) waitOpen(ctx context.Context) workerStats {
	m := newRateMeter()
	r.prog.set(func(time.Duration) string {
		s := r.stats()
		return fmt.Sprintf("connecting  open %s/%s (%s/s)  failed %s", count(s.Opened), count(r.cfg.Conns),
			countf(m.rate(s.Opened)), count(s.Failed))
	})
	for _, w := range r.currentWorkers() {
		select {
		case <-w.ready():
		case <-ctx.Done():
		}
	}
	return r.stats()
}

// merged is the results of all workers together.
type merged struct {
	workerStats
	lost, lossy        int64
	negotiated         int64
	takeover           int64
	traffic            traffic
	latency, connLat   histogram
	subLat             histogram
	openStart, openEnd int64
	reconnect          reconnectSnapshot // but its latency, in reconnectLat
	reconnectLat       histogram
}

// finishWorkers closes every worker's connections, all at once, and
// merges the results.
func (r *run) finishWorkers(published []uint64) (*merged, error) {
	workers := r.takeWorkers()
	results := make([]workerResult, len(workers))
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = w.finish(published)
		}()
	}
	wg.Wait()
	m := &merged{}
	for i, res := range results {
		if errs[i] != nil {
			r.errs.add(errs[i].Error())
		}
		m.add(res.workerStats)
		m.lost += res.Lost
		m.lossy += res.LossySubs
		m.negotiated += res.Negotiated
		m.takeover += res.ContextTakeover
		m.traffic.add(res.Traffic)
		m.latency.merge(res.Latency)
		m.connLat.merge(res.ConnectLatency)
		m.subLat.merge(res.SubscribeLatency)
		if res.OpenStart != 0 && (m.openStart == 0 || res.OpenStart < m.openStart) {
			m.openStart = res.OpenStart
		}
		m.openEnd = max(m.openEnd, res.OpenEnd)
		m.addReconnect(res.Reconnect)
		r.errs.merge(res.Errors)
	}
	return m, errors.Join(errs...)
}

func (m *merged) addReconnect(rc reconnectSnapshot) {
	m.reconnect.Attempts += rc.Attempts
	m.reconnect.FailedAttempts += rc.FailedAttempts
	if rc.FirstDrop != 0 && (m.reconnect.FirstDrop == 0 || rc.FirstDrop < m.reconnect.FirstDrop) {
		m.reconnect.FirstDrop = rc.FirstDrop
	}
	m.reconnect.LastBack = max(m.reconnect.LastBack, rc.LastBack)
	m.reconnectLat.merge(rc.Latency)
}

// result starts the summary with what every scenario reports.
func (r *run) result(m *merged) *Result {
	spec := r.spec()
	res := &Result{
		Scenario: r.scenario,
		URL:      strings.Join(r.cfg.urls, ","),
		Protocol: r.cfg.Protocol.String(),
		Procs:    r.cfg.Procs,
		Sources:  len(spec.Sources),
		Connections: ConnResult{
			Target:  r.cfg.Conns,
			Subs:    len(spec.channelsFor(0)),
			Opened:  m.Opened,
			Failed:  m.Failed,
			Dropped: m.Dropped,
			Latency: m.connLat.percentiles(),
		},
	}
	res.Received = trafficResult(r.cfg.Compression, m)
	if d := time.Duration(m.openEnd - m.openStart); d > 0 {
		res.Connections.PerSecond = float64(m.Opened) / d.Seconds()
	}
	res.Reconnect = r.reconnectResult(m)
	res.Errors = r.errs.list()
	return res
}

func trafficResult(offered bool, m *merged) TrafficResult {
	t := TrafficResult{
		Compression:        offered,
		Negotiated:         m.negotiated,
		ContextTakeover:    m.takeover,
		Messages:           m.traffic.Messages,
		CompressedMessages: m.traffic.Compressed,
		WireBytes:          m.traffic.Wire,
		MessageBytes:       m.traffic.Payload,
	}
	if t.WireBytes > 0 {
		t.Ratio = float64(t.MessageBytes) / float64(t.WireBytes)
	}
	if offered {
		switch {
		case m.Opened > 0 && m.negotiated == m.Opened:
			t.NegotiatedBy = "all"
		case m.negotiated > 0:
			t.NegotiatedBy = "some"
		default:
			t.NegotiatedBy = "none"
		}
	}
	return t
}

func (r *run) server() serverWatch {
	return serverWatch{pids: r.cfg.PIDs, urls: r.cfg.urls, errs: &r.errs}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
