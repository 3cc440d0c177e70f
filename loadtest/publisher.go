package loadtest

import (
	"bytes"
	"context"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// API methods a publisher uses.
const (
	methodPublish   = "publish"
	methodBatch     = "batch"
	methodBroadcast = "broadcast"
)

// publisher sends numbered publications through the API, one request
// at a time, so that its sequence numbers reach the server in order.
type publisher struct {
	id     int
	api    *apiClient
	method string
	batch  int
	data   *payloadMaker
	// head is the start of a publish or a broadcast request up to the
	// data: {"channel":"c","data": or {"channels":[...],"data":
	head []byte

	seq      uint64
	accepted atomic.Uint64 // publications (broadcasts) the server took
	requests atomic.Int64
	failures atomic.Int64

	latency *histogram
	errs    *errorSamples
	body    []byte
	reply   bytes.Buffer
}

func newPublisher(id int, api *apiClient, method string, channels []string, batch int, data *payloadMaker, latency *histogram, errs *errorSamples) *publisher {
	p := &publisher{id: id, api: api, method: method, batch: max(batch, 1), data: data, latency: latency, errs: errs}
	if method == methodBroadcast {
		p.head = append(p.head, `{"channels":[`...)
		for i, ch := range channels {
			if i > 0 {
				p.head = append(p.head, ',')
			}
			p.head = protocol.AppendJSONString(p.head, ch)
		}
		p.head = append(p.head, `],"data":`...)
	} else {
		p.head = append(p.head, `{"channel":`...)
		p.head = protocol.AppendJSONString(p.head, channels[0])
		p.head = append(p.head, `,"data":`...)
	}
	return p
}

// run publishes until until ends, paced by pace. A request under way
// when until ends is finished under ctx, so that a publication the
// server took is counted.
func (p *publisher) run(ctx, until context.Context, pace *pacer) {
	for pace.wait(until) {
		p.once(ctx)
	}
}

func (p *publisher) once(ctx context.Context) {
	now := time.Now()
	p.body = p.appendBody(p.body[:0], now.UnixNano())
	p.requests.Add(1)
	r, err := p.api.call(ctx, p.method, p.body, &p.reply)
	if err != nil {
		if ctx.Err() != nil {
			return // the run ended during the request
		}
		p.failures.Add(1)
		p.errs.add(err.Error())
		return
	}
	p.latency.record(int64(time.Since(now)))
	ok, failed := p.count(r)
	p.accepted.Add(uint64(ok))
	if failed > 0 {
		p.failures.Add(int64(failed))
	}
}

// appendBody appends the next request: batch publications, or one.
func (p *publisher) appendBody(b []byte, now int64) []byte {
	if p.method != methodBatch {
		p.seq++
		b = append(b, p.head...)
		b = p.data.append(b, p.id, p.seq, now)
		return append(b, '}')
	}
	b = append(b, `{"commands":[`...)
	for i := range p.batch {
		if i > 0 {
			b = append(b, ',')
		}
		p.seq++
		b = append(b, `{"publish":`...)
		b = append(b, p.head...)
		b = p.data.append(b, p.id, p.seq, now)
		b = append(b, '}', '}')
	}
	return append(b, ']', '}')
}

// count tells how many publications of a reply were accepted and how
// many refused, noting why.
func (p *publisher) count(r *apiReply) (ok, failed int) {
	if r.Error != nil {
		p.errs.add(r.Error.String())
		return 0, p.perRequest()
	}
	switch p.method {
	case methodBatch:
		for _, rep := range r.Replies {
			if rep.Error != nil {
				p.errs.add(rep.Error.String())
				failed++
			}
		}
		return len(r.Replies) - failed, failed
	case methodBroadcast:
		if r.Result != nil {
			for _, rep := range r.Result.Responses {
				if rep.Error != nil {
					p.errs.add(rep.Error.String())
					failed++
				}
			}
		}
		// A broadcast counts as accepted; a channel that refused it
		// shows up as losses of its subscriber.
		return 1, failed
	}
	return 1, 0
}

func (p *publisher) perRequest() int {
	if p.method == methodBatch {
		return p.batch
	}
	return 1
}
