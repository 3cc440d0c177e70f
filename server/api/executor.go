package api

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/faillog"
)

// RPCFunc serves the rpc method: it gets the method's name and params and
// returns the data of the result. An *Error or *gyre.Error it returns is
// answered with its code and message; any other error with 100 internal
// server error (and a log line).
type RPCFunc func(ctx context.Context, method string, params []byte) ([]byte, error)

// Executor runs the API's methods on a node. Each method is one typed
// function (methods.go): the HTTP handler calls it after decoding JSON,
// the gRPC API (server/grpcapi) after converting protobuf, and a batch
// from either runs its commands through runBatch. It is safe for
// concurrent use.
type Executor struct {
	node       *gyre.Node
	rpc        RPCFunc
	sharedPoll func(channel string) bool
	maxBatch   int
	log        *slog.Logger
	fails      *faillog.Log
}

// NewExecutor creates the executor of n's API. It reads Logger,
// MaxBatchSize, RPC and SharedPoll of cfg; the other fields belong to
// the HTTP handler.
func NewExecutor(n *gyre.Node, cfg Config) *Executor {
	if cfg.MaxBatchSize == 0 {
		cfg.MaxBatchSize = 100_000
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Executor{node: n, rpc: cfg.RPC, sharedPoll: cfg.SharedPoll, maxBatch: cfg.MaxBatchSize, log: log, fails: faillog.New(log)}
}

// APIError maps err, returned by method, to the error its caller answers:
// an *Error as is, a *gyre.Error with its code and message, anything else
// hidden behind 100 internal server error. Internal errors are logged at
// error level and bad commands (104, 107) at info level, both without
// flooding the log.
func (e *Executor) APIError(method string, err error) *Error {
	return e.failed(method, "", err)
}

// failed is APIError for a failure about channel (none when ""). An
// internal error (100) is logged naming the method, the channel and the
// cause, which the reply does not tell; failures by the thousand (the
// broker down) are summed up rather than logged one by one.
func (e *Executor) failed(method, channel string, err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		if ae.Code == errBadRequest.Code || ae.Code == errMethodNotFound.Code {
			e.badCommand(method, ae)
		}
		return ae
	}
	var ge *gyre.Error
	if errors.As(err, &ge) {
		ae = &Error{Code: ge.Code, Message: ge.Message}
	} else {
		ae = errInternal
	}
	if ae.Code == errInternal.Code {
		attrs := []any{"method", method}
		if channel != "" {
			attrs = append(attrs, "channel", channel)
		}
		kind := method
		if lookup(method) == nil {
			kind = "other" // the kinds must stay a fixed set
		}
		e.fails.Add(kind, slog.LevelError, "api method failed", append(attrs, "error", err)...)
	}
	return ae
}

// badCommand logs a command the API could not run as asked (104, 107) at
// info level: the sender's fault, which its reply tells it.
func (e *Executor) badCommand(method string, ae *Error) {
	e.fails.Add("bad command", slog.LevelInfo, "api bad command", "method", clip(method), "error", ae.Message)
}

// Batch runs the commands of req and returns their replies in command
// order. A sequential batch publishes each stretch of consecutive publish
// and broadcast commands in one gyre.Node.PublishMany; a parallel one runs
// up to 16 commands at a time. It fails as a whole (107) only when it has
// more than MaxBatchSize commands.
func (e *Executor) Batch(ctx context.Context, req *BatchRequest) (BatchResult, error) {
	n := req.len()
	if err := e.checkBatchSize(n); err != nil {
		return BatchResult{}, err
	}
	return BatchResult{Replies: e.runBatch(ctx, n, req.at, req.Parallel)}, nil
}

func (e *Executor) checkBatchSize(n int) error {
	if n > e.maxBatch {
		return &Error{107, "bad request: too many commands in batch"}
	}
	return nil
}

// runBatch runs n commands, at(i) giving the i-th (called once for each,
// in order, so that a caller may decode them one at a time), and returns
// their replies in the same order. Every batch runs here: the HTTP API's,
// the legacy form's several commands and the gRPC API's.
//
// The commands get no span of their own: their publications carry the
// trace context of ctx's span (the batch's), unless a command was given
// a span (Command.SetSpan), which then gets its attributes and gives its
// publications its context.
func (e *Executor) runBatch(ctx context.Context, n int, at func(int) Command, parallel bool) []Reply {
	replies := make([]Reply, n)
	tc := traceOf(ctx)
	if parallel {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range n {
			c := at(i)
			c.annotate()
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				replies[i] = e.runCommand(ctx, &c)
			})
		}
		wg.Wait()
		return replies
	}

	// A sequential batch publishes the publications of each stretch of
	// consecutive publish and broadcast commands together, in one
	// PublishMany: pipelined to Redis, and each connection woken once for
	// them. Any other command ends the stretch first, so that it sees what
	// came before it.
	var g publishGroup
	for i := range n {
		c := at(i)
		c.annotate()
		if c.err != nil && (c.Method() == "publish" || c.Method() == "broadcast") {
			// It publishes nothing, so the stretch goes on past it.
			replies[i] = e.runCommand(ctx, &c)
			continue
		}
		if c.publishes() {
			if err := g.add(e, i, &c, c.trace(tc)); err != nil {
				// It publishes nothing, so the stretch goes on past it.
				replies[i].Error = e.APIError(c.Method(), err)
			}
			continue
		}
		g.publish(e, replies)
		replies[i] = e.runCommand(ctx, &c)
	}
	g.publish(e, replies)
	g.release()
	return replies
}

// runCommand runs one command of a batch.
func (e *Executor) runCommand(ctx context.Context, c *Command) Reply {
	if c.err != nil {
		e.badCommand(c.name, c.err)
		return Reply{Error: c.err}
	}
	if c.span != nil {
		ctx = trace.ContextWithSpan(ctx, c.span)
	}
	res, err := c.method.run(e, ctx, c.req)
	if err != nil {
		return Reply{Error: e.APIError(c.method.Name, err)}
	}
	return Reply{Method: c.method.Name, Result: res}
}

// run runs method m with req, named with its channels on the span of
// ctx: every call but a batch's commands starts here.
func (e *Executor) run(ctx context.Context, m *Method, req any) (any, error) {
	annotate(trace.SpanFromContext(ctx), m, req)
	return m.run(e, ctx, req)
}
