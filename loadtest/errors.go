package loadtest

import (
	"sort"
	"sync"
)

// maxDistinctErrors bounds the error kinds kept; a run that fails
// 15,000 times the same way keeps one line and a count.
const maxDistinctErrors = 20

// errorSamples counts errors by message.
type errorSamples struct {
	mu     sync.Mutex
	counts map[string]int64
	other  int64
}

func (e *errorSamples) add(msg string) { e.addN(msg, 1) }

func (e *errorSamples) addN(msg string, n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int64{}
	}
	if _, ok := e.counts[msg]; !ok && len(e.counts) >= maxDistinctErrors {
		e.other += n
		return
	}
	e.counts[msg] += n
}

// ErrorCount is one kind of error and how often it happened.
type ErrorCount struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// list returns the errors, most frequent first.
func (e *errorSamples) list() []ErrorCount {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]ErrorCount, 0, len(e.counts)+1)
	for m, n := range e.counts {
		out = append(out, ErrorCount{Message: m, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Message < out[j].Message
	})
	if e.other > 0 {
		out = append(out, ErrorCount{Message: "(errors of other kinds)", Count: e.other})
	}
	return out
}

func (e *errorSamples) merge(list []ErrorCount) {
	for _, ec := range list {
		e.addN(ec.Message, ec.Count)
	}
}
