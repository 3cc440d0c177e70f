package kafka

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/server/consume"
)

// partition runs the records of one assigned partition, in order, in a
// goroutine of its own.
type partition struct {
	r     *run
	topic string
	id    int32
	// ctx ends when the partition is revoked, lost or the consumer stops:
	// the batch running finishes, nothing more starts.
	ctx    context.Context
	cancel context.CancelFunc
	exited chan struct{}
	wake   chan struct{}

	mu     sync.Mutex
	queue  []*kgo.Record
	paused bool

	// next is the offset of the record after the last one run, -1 before
	// one is known; end is the log's end the consumer may read, -1
	// before a fetch told it.
	next, end atomic.Int64
}

func newPartition(r *run, topic string, id int32) *partition {
	ctx, cancel := context.WithCancel(r.ctx)
	p := &partition{
		r: r, topic: topic, id: id, ctx: ctx, cancel: cancel,
		exited: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	p.next.Store(-1)
	p.end.Store(-1)
	go p.loop()
	return p
}

// push queues the records of a poll, and pauses fetching from the
// partition when its queue is past partition_queue_max_size.
func (p *partition) push(recs []*kgo.Record) {
	p.mu.Lock()
	if len(p.queue) == 0 {
		p.next.CompareAndSwap(-1, recs[0].Offset)
	}
	p.queue = append(p.queue, recs...)
	if !p.paused && p.full() {
		// Under p.mu, so that the loop's resume cannot come first.
		p.paused = true
		p.r.cl.PauseFetchPartitions(map[string][]int32{p.topic: {p.id}})
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// full reports whether the queue is past its bound; -1 pauses as soon as
// anything waits. p.mu is held.
func (p *partition) full() bool {
	limit := p.r.cfg.PartitionQueueMaxSize
	if limit < 0 {
		return len(p.queue) > 0
	}
	return len(p.queue) > limit
}

// low reports whether a paused partition's queue is short enough to fetch
// again: down to half its bound (empty with -1), so that a partition
// whose queue stays near its bound does not fetch again for every batch
// it runs. p.mu is held.
func (p *partition) low() bool {
	return len(p.queue) <= max(p.r.cfg.PartitionQueueMaxSize, 0)/2
}

// unpause resumes fetching from the partition if it was paused.
func (p *partition) unpause() {
	p.mu.Lock()
	if p.paused {
		p.paused = false
		p.r.cl.ResumeFetchPartitions(map[string][]int32{p.topic: {p.id}})
	}
	p.mu.Unlock()
}

// loop runs the queued records a batch at a time until ctx ends.
func (p *partition) loop() {
	defer close(p.exited)
	b := newBuilder(p.r.cfg, p.r.d.Traced())
	var msgs []consume.Message
	for {
		recs := p.take()
		if recs == nil {
			return
		}
		msgs = b.build(recs, msgs[:0])
		done, _ := p.r.d.Dispatch(p.ctx, msgs)
		clear(msgs) // the records' memory is not kept past their run
		if done > 0 {
			last := recs[done-1]
			p.next.Store(last.Offset + 1)
			p.r.commits.mark(p.topic, p.id, kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1})
		}
		if done < len(recs) {
			// ctx ended while a command waited to run again: the rest is
			// left to the partition's next owner, or the next start.
			return
		}
		p.mu.Lock()
		if p.paused && p.low() {
			p.paused = false
			p.r.cl.ResumeFetchPartitions(map[string][]int32{p.topic: {p.id}})
		}
		p.mu.Unlock()
	}
}

// take waits for queued records and returns up to max_poll_records of
// them (the rest of the queue included, when several polls piled up):
// nil once ctx ended, whatever is queued.
func (p *partition) take() []*kgo.Record {
	for {
		if p.ctx.Err() != nil {
			return nil
		}
		p.mu.Lock()
		if n := len(p.queue); n > 0 {
			k := min(n, p.r.cfg.MaxPollRecords)
			recs := p.queue[:k:k]
			if k == n {
				p.queue = nil
			} else {
				p.queue = p.queue[k:]
			}
			p.mu.Unlock()
			return recs
		}
		p.mu.Unlock()
		select {
		case <-p.ctx.Done():
			return nil
		case <-p.wake:
		}
	}
}

// raiseEnd records that the partition's log ends at end or further.
func (p *partition) raiseEnd(end int64) {
	for {
		cur := p.end.Load()
		if end <= cur || p.end.CompareAndSwap(cur, end) {
			return
		}
	}
}

// lag is the number of records of the partition that wait to run.
func (p *partition) lag() int64 {
	next, end := p.next.Load(), p.end.Load()
	if next < 0 || end < 0 || end < next {
		return 0
	}
	return end - next
}
