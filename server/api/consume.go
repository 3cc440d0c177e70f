package api

import (
	"context"
	"encoding/json"

	"github.com/gyrehq/gyre"
)

// What consumers (server/consume) need of the API: commands read from a
// queue message as the HTTP API reads them, run in order as a sequential
// batch runs them, and their failures told apart.

// DecodeCommands reads the commands of one consumed message: the method
// called name with its JSON request, or, for "batch", each command of the
// batch in order (its parallel flag is not used: a queue keeps order). A
// command that cannot be read carries its error, which Run answers.
func DecodeCommands(name string, body []byte) []Command {
	if name != "batch" {
		return []Command{batchCommand(name, body)}
	}
	var req BatchRequest
	if err := decode(body, &req); err != nil {
		return []Command{{name: name, err: errBadRequest}}
	}
	if req.len() == 0 {
		return []Command{{name: name, err: &Error{107, "bad request: empty batch"}}}
	}
	cmds := make([]Command, req.len())
	for i := range cmds {
		cmds[i] = req.at(i)
	}
	return cmds
}

// DecodeMethodPayload reads {"method": ..., "payload": {...}}, the body of
// a consumed message that names no method elsewhere (a header or field).
func DecodeMethodPayload(body []byte) []Command {
	var m struct {
		Method  string          `json:"method"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Method == "" {
		return []Command{{name: "", err: &Error{107, `bad request: want {"method": ..., "payload": {...}}`}}}
	}
	return DecodeCommands(m.Method, m.Payload)
}

// Run runs cmds in order, as a sequential batch does (each stretch of
// publish and broadcast commands in one gyre.Node.PublishMany), and
// returns their replies in the same order. Failures are logged as the
// HTTP API's are.
func (e *Executor) Run(ctx context.Context, cmds []Command) []Reply {
	return e.runBatch(ctx, len(cmds), func(i int) Command { return cmds[i] }, false)
}

// Temporary reports whether the command of r failed for a reason that may
// pass (100 internal error: the broker unreachable or too slow; 111 too
// many requests: a node of the cluster is behind and publishes are held
// back), so that running it again may succeed; a broadcast counts as
// failed so when any of its channels did. A reply without error, or with
// any other error, is final.
func (r Reply) Temporary() bool {
	if r.Error != nil {
		return temporaryCode(r.Error.Code)
	}
	if b, ok := r.Result.(BroadcastResult); ok {
		for _, resp := range b.Responses {
			if resp.Error != nil && temporaryCode(resp.Error.Code) {
				return true
			}
		}
	}
	return false
}

func temporaryCode(code uint32) bool {
	return code == errInternal.Code || code == gyre.ErrorTooManyRequests.Code
}
