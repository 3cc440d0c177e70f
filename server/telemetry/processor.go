package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// processor exports ended, sampled spans in batches from a bounded queue.
// OnEnd never waits: when the queue is full the span is dropped and
// counted. One goroutine exports, a batch when it is full or every delay,
// each export bounded by timeout; a failed export drops its spans and is
// counted too, so that every span handed to the processor ends up in
// exactly one of the counters. (docs/decisions.md says why this is not
// the SDK's BatchSpanProcessor.)
type processor struct {
	exp     sdktrace.SpanExporter
	queue   chan sdktrace.ReadOnlySpan
	batch   int
	delay   time.Duration
	timeout time.Duration
	log     *slog.Logger

	exported, queueFull, exportFailed prometheus.Counter
	// full counts the spans dropped for a full queue, for the worker's
	// log lines; the counter above is for scrapes.
	full atomic.Uint64

	// base bounds the exports the worker starts on its own; Shutdown
	// cancels it when its context ends first.
	base       context.Context
	cancelBase context.CancelFunc
	flushes    chan flushRequest
	stopping   chan struct{}
	stopOnce   sync.Once
	stopCtx    context.Context // set before stopping is closed
	done       chan struct{}
	stopErr    error // set before done is closed
	closed     atomic.Bool

	// Owned by the worker.
	failing     bool   // the last export failed
	failedSpans uint64 // spans dropped since the exports began to fail
	fullSeen    uint64 // full when last looked at
	fullEpisode bool   // spans are being dropped for a full queue
	fullFrom    uint64 // full when that episode began
}

type flushRequest struct {
	ctx  context.Context
	done chan error // buffered: the requester may have gone
}

// processorConfig bounds the processor.
type processorConfig struct {
	queueSize, batchSize int
	delay, timeout       time.Duration
	exported, queueFull  prometheus.Counter
	exportFailed         prometheus.Counter
	log                  *slog.Logger
}

func newProcessor(exp sdktrace.SpanExporter, c processorConfig) *processor {
	base, cancel := context.WithCancel(context.Background())
	p := &processor{
		exp: exp, queue: make(chan sdktrace.ReadOnlySpan, c.queueSize),
		batch: c.batchSize, delay: c.delay, timeout: c.timeout, log: c.log,
		exported: c.exported, queueFull: c.queueFull, exportFailed: c.exportFailed,
		base: base, cancelBase: cancel,
		flushes: make(chan flushRequest), stopping: make(chan struct{}), done: make(chan struct{}),
	}
	go p.run()
	return p
}

func (p *processor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s for export, or drops it when the queue is full.
func (p *processor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() || p.closed.Load() {
		return
	}
	select {
	case p.queue <- s:
	default:
		p.queueFull.Inc()
		p.full.Add(1)
	}
}

// ForceFlush exports what is queued, within ctx.
func (p *processor) ForceFlush(ctx context.Context) error {
	r := flushRequest{ctx: ctx, done: make(chan error, 1)}
	select {
	case p.flushes <- r:
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued and shuts the exporter down, within ctx;
// what cannot be exported by then is dropped (export_failed). Later calls
// wait for the first to finish.
func (p *processor) Shutdown(ctx context.Context) error {
	p.stopOnce.Do(func() {
		p.closed.Store(true)
		p.stopCtx = ctx
		close(p.stopping)
	})
	select {
	case <-p.done:
		return p.stopErr
	case <-ctx.Done():
		// An export the worker started on its own may have most of its
		// timeout left: end it, so that the worker follows soon.
		p.cancelBase()
		return ctx.Err()
	}
}

func (p *processor) run() {
	defer close(p.done)
	defer p.cancelBase()
	tick := time.NewTicker(p.delay)
	defer tick.Stop()
	buf := make([]sdktrace.ReadOnlySpan, 0, p.batch)
	for {
		select {
		case s := <-p.queue:
			if buf = append(buf, s); len(buf) == p.batch {
				_ = p.export(p.base, buf)
				buf = buf[:0]
			}
		case <-tick.C:
			if len(buf) > 0 {
				_ = p.export(p.base, buf)
				buf = buf[:0]
			}
			p.noteQueueFull()
		case r := <-p.flushes:
			r.done <- p.drain(r.ctx, buf)
			buf = buf[:0]
		case <-p.stopping:
			err := p.drain(p.stopCtx, buf)
			p.noteQueueFull()
			p.stopErr = errors.Join(err, p.exp.Shutdown(p.stopCtx))
			return
		}
	}
}

// drain exports buf and what the queue holds now, in batches, within ctx;
// once ctx has ended the rest is dropped as failed.
func (p *processor) drain(ctx context.Context, buf []sdktrace.ReadOnlySpan) error {
	var errs []error
	for n := len(p.queue); ; n-- {
		if len(buf) == p.batch || (n == 0 && len(buf) > 0) {
			if ctx.Err() != nil {
				p.drop(len(buf), ctx.Err())
			} else {
				errs = append(errs, p.export(ctx, buf))
			}
			buf = buf[:0]
		}
		if n == 0 {
			return errors.Join(errs...)
		}
		buf = append(buf, <-p.queue)
	}
}

// export sends one batch, within the processor's timeout, and counts it.
func (p *processor) export(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	err := p.exp.ExportSpans(ctx, spans)
	cancel()
	if err != nil {
		p.drop(len(spans), err)
	} else {
		p.exported.Add(float64(len(spans)))
		if p.failing {
			p.failing = false
			p.log.Info("opentelemetry: span export recovered", "spans_dropped", p.failedSpans)
			p.failedSpans = 0
		}
	}
	// The spans are done with: let them go before the buffer is reused.
	clear(spans)
	return err
}

// drop counts n spans that could not be exported, and says so once per
// episode of failures.
func (p *processor) drop(n int, err error) {
	p.exportFailed.Add(float64(n))
	p.failedSpans += uint64(n)
	if !p.failing {
		p.failing = true
		p.log.Warn("opentelemetry: span export failed; spans are dropped until an export succeeds", "spans", n, "error", err)
	}
}

// noteQueueFull says when spans begin to be dropped for a full queue, and
// when a whole delay passed without one.
func (p *processor) noteQueueFull() {
	full := p.full.Load()
	switch {
	case full != p.fullSeen && !p.fullEpisode:
		p.fullEpisode, p.fullFrom = true, p.fullSeen
		p.log.Warn("opentelemetry: span queue full; spans are dropped (raise OTEL_BSP_MAX_QUEUE_SIZE, or sample fewer with OTEL_TRACES_SAMPLER)", "queue_size", cap(p.queue))
	case full == p.fullSeen && p.fullEpisode:
		p.fullEpisode = false
		p.log.Info("opentelemetry: span queue has room again", "spans_dropped", full-p.fullFrom)
	}
	p.fullSeen = full
}
