package cluster_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// publisher publishes numbered publications ({"n": N}) into a channel
// through the API of one node, in batches, the way a backend would: a
// publish that fails is retried with the same idempotency key until it
// succeeds, so a publish whose answer was lost is not published twice.
type publisher struct {
	node    *gyreproc.Node
	channel string
	batch   int
	// pause between batches; zero publishes as fast as the node answers.
	pause time.Duration
	// acked counts publishes the node confirmed; shared by publishers.
	acked *atomic.Int64
	// failures counts failed requests and failed publishes in batches.
	failures atomic.Int64
	// epochs seen in the results.
	epochs map[string]bool
}

// run publishes every n of ns and returns when all are confirmed, or an
// error after limit.
func (p *publisher) run(ns []int, limit time.Duration) error {
	p.epochs = map[string]bool{}
	deadline := time.Now().Add(limit)
	pending := ns
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("publisher on %s: %d publishes still failing after %v", p.node.Name, len(pending), limit)
		}
		chunk := pending[:min(p.batch, len(pending))]
		failed, err := p.publishBatch(chunk)
		if err != nil {
			p.failures.Add(1)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		pending = append(failed, pending[len(chunk):]...)
		if len(failed) > 0 {
			p.failures.Add(int64(len(failed)))
			time.Sleep(100 * time.Millisecond)
		} else if p.pause > 0 {
			time.Sleep(p.pause)
		}
	}
	return nil
}

// publishBatch sends one batch and returns the numbers whose publish
// failed.
func (p *publisher) publishBatch(ns []int) ([]int, error) {
	cmds := make([]map[string]any, len(ns))
	for i, n := range ns {
		cmds[i] = map[string]any{"publish": map[string]any{
			"channel":         p.channel,
			"data":            json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`),
			"idempotency_key": "n" + strconv.Itoa(n),
		}}
	}
	raw, err := p.node.Call("batch", map[string]any{"commands": cmds})
	if err != nil {
		return nil, err
	}
	var res struct {
		Replies []struct {
			Publish *struct {
				Offset uint64 `json:"offset"`
				Epoch  string `json:"epoch"`
			} `json:"publish"`
			Error *gyreproc.APIError `json:"error"`
		} `json:"replies"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode batch reply %s: %w", raw, err)
	}
	if len(res.Replies) != len(ns) {
		return nil, fmt.Errorf("batch of %d answered with %d replies", len(ns), len(res.Replies))
	}
	var failed []int
	for i, r := range res.Replies {
		if r.Publish == nil {
			failed = append(failed, ns[i])
			continue
		}
		p.epochs[r.Publish.Epoch] = true
		p.acked.Add(1)
	}
	return failed, nil
}

// numbers returns the n in [0, total) with n%parts == part.
func numbers(total, parts, part int) []int {
	var out []int
	for n := part; n < total; n += parts {
		out = append(out, n)
	}
	return out
}
