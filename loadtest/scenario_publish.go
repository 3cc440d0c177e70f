package loadtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

const (
	// drainStall ends the wait for deliveries after publishing when none
	// has arrived for this long: what is missing by then is lost.
	drainStall = 3 * time.Second
	// drainMax bounds that wait in any case.
	drainMax  = time.Minute
	drainPoll = 20 * time.Millisecond
)

// publish runs fanout (one channel, every connection subscribed) or
// channels (a channel per connection, each publication a broadcast to
// all of them): it publishes for the duration, waits for the
// deliveries to drain, and reports throughput, latency, losses and
// reordering.
func (r *run) publish(ctx context.Context, broadcast bool) (*Result, error) {
	spec := r.spec()
	spec.Publishers = r.cfg.Publishers
	srv := r.server()
	before := srv.snap()
	if err := r.startWorkers(ctx, spec); err != nil {
		return nil, err
	}
	opened := r.waitOpen(ctx)
	if opened.Opened == 0 {
		m, err := r.finishWorkers(nil)
		return r.result(m), errors.Join(errors.New("loadtest: no connection opened"), err)
	}
	apis := newAPIClients(r.cfg.apis, r.cfg.APIKey, r.cfg.Publishers)
	defer closeAPIClients(apis)
	pubs, apiLat := r.publishers(apis, broadcast)
	subs := r.stats().Opened
	s0 := srv.snap()
	r.ready(opened)
	cpu0 := r.clientCPU()
	pubStart := time.Now()
	r.prog.set(r.publishLine("publishing", pubs, subs))
	r.runPublishers(ctx, pubs)
	pubEnd := time.Now()
	published := make([]uint64, len(pubs))
	var sent uint64
	for i, p := range pubs {
		published[i] = p.accepted.Load()
		sent += published[i]
	}
	r.prog.set(r.publishLine("draining", pubs, subs))
	last := r.drain(ctx, int64(sent)*subs)
	s1 := srv.snap()
	clientCPU := r.clientCPU() - cpu0
	m, err := r.finishWorkers(published)
	res := r.result(m)
	res.Publish = r.publishResult(pubs, apiLat, pubEnd.Sub(pubStart))
	window := time.Duration(last - pubStart.UnixNano())
	if last == 0 {
		window = pubEnd.Sub(pubStart)
	}
	res.Delivery = &DeliveryResult{
		Subscribers:      subs,
		Expected:         int64(sent) * subs,
		Received:         m.Received,
		Lost:             m.lost,
		LossySubscribers: m.lossy,
		OutOfOrder:       m.OutOfOrder,
		Seconds:          window.Seconds(),
		PerSecond:        float64(m.Received) / window.Seconds(),
		Latency:          m.latency.percentiles(),
	}
	phase := time.Since(pubStart).Seconds()
	res.Client = ClientResult{CPUSeconds: clientCPU, CPUPercent: percent(clientCPU, phase),
		CPUPerDeliveryMicros: microsPer(clientCPU, m.Received)}
	res.Server = srv.result(serverMoments{before: before, afterOpen: s0, end: s1, cpu0: s0, cpu1: s1, seconds: phase})
	if sr := res.Server; sr != nil {
		sr.RSSPerConn = perConn(sr.RSSAfterOpen-sr.RSSBefore, subs)
		sr.CPUPerDeliveryMicros = microsPer(sr.CPUSeconds, m.Received)
	}
	return res, err
}

// publishers makes cfg.Publishers publishers sharing one latency
// histogram, publisher i publishing through apis[i mod N].
func (r *run) publishers(apis []*apiClient, broadcast bool) ([]*publisher, *histogram) {
	lat := &histogram{}
	method, channels := methodPublish, []string{fanoutChannel(r.cfg.Channel)}
	if r.cfg.Pattern {
		channels[0] = patternChannel(r.cfg.Channel)
	}
	if r.cfg.Batch > 1 {
		method = methodBatch
	}
	if broadcast {
		method = methodBroadcast
		channels = make([]string, r.cfg.Conns)
		for i := range channels {
			channels[i] = ownChannel(r.cfg.Channel, i)
		}
	}
	pubs := make([]*publisher, r.cfg.Publishers)
	for i := range pubs {
		pubs[i] = newPublisher(i, apis[i%len(apis)], method, channels, r.cfg.Batch, newPayloadMaker(r.cfg.Payload, r.cfg.Size, r.cfg.Seed), lat, &r.errs)
	}
	return pubs, lat
}

// runPublishers publishes for the duration, each publisher paced to its
// share of the rate (in requests: a batch request carries Batch).
func (r *run) runPublishers(ctx context.Context, pubs []*publisher) {
	until, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	defer cancel()
	perRequest := float64(len(pubs) * r.cfg.Batch)
	var wg sync.WaitGroup
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.run(ctx, until, newPacer(r.cfg.Rate/perRequest))
		}()
	}
	wg.Wait()
}

// drain waits until expected deliveries arrived, or none has for
// drainStall, and returns when the last one did (Unix ns).
func (r *run) drain(ctx context.Context, expected int64) int64 {
	lastCount, lastChange := int64(-1), time.Now()
	deadline := time.Now().Add(drainMax)
	for {
		s := r.stats()
		now := time.Now()
		if s.Received >= expected || now.After(deadline) || ctx.Err() != nil {
			return s.LastDelivery
		}
		if s.Received != lastCount {
			lastCount, lastChange = s.Received, now
		} else if now.Sub(lastChange) > drainStall {
			return s.LastDelivery
		}
		sleep(ctx, drainPoll)
	}
}

func (r *run) publishLine(phase string, pubs []*publisher, subs int64) func(time.Duration) string {
	sentRate, recvRate := newRateMeter(), newRateMeter()
	return func(time.Duration) string {
		var sent uint64
		var errs int64
		for _, p := range pubs {
			sent += p.accepted.Load()
			errs += p.failures.Load()
		}
		s := r.stats()
		return fmt.Sprintf("%s  sent %s (%s/s)  delivered %s (%s/s)  behind %s  out-of-order %s  dropped %s  errors %s",
			phase, count(sent), countf(sentRate.rate(int64(sent))), count(s.Received), countf(recvRate.rate(s.Received)),
			count(max(int64(sent)*subs-s.Received, 0)), count(s.OutOfOrder), count(s.Dropped), count(errs))
	}
}

func (r *run) publishResult(pubs []*publisher, lat *histogram, took time.Duration) *PublishResult {
	res := &PublishResult{
		Method:     pubs[0].method,
		Publishers: len(pubs),
		Batch:      r.cfg.Batch,
		Size:       r.cfg.Size,
		Payload:    r.cfg.Payload,
		TargetRate: r.cfg.Rate,
		Seconds:    took.Seconds(),
		Latency:    lat.percentiles(),
	}
	for _, p := range pubs {
		res.Requests += p.requests.Load()
		res.Publications += p.accepted.Load()
		res.Errors += p.failures.Load()
	}
	if res.Seconds > 0 {
		res.PerSecond = float64(res.Publications) / res.Seconds
	}
	return res
}
