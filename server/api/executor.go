package api

import (
	"context"
	"errors"
	"log/slog"
	"sync"

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
	node     *gyre.Node
	rpc      RPCFunc
	maxBatch int
	log      *slog.Logger
	fails    *faillog.Log
}

// NewExecutor creates the executor of n's API. It reads Logger,
// MaxBatchSize and RPC of cfg; the other fields belong to the HTTP
// handler.
func NewExecutor(n *gyre.Node, cfg Config) *Executor {
	if cfg.MaxBatchSize == 0 {
		cfg.MaxBatchSize = 100_000
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Executor{node: n, rpc: cfg.RPC, maxBatch: cfg.MaxBatchSize, log: log, fails: faillog.New(log)}
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
		if _, ok := commandDecoders[method]; !ok {
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
	if err := e.checkBatchSize(len(req.Commands)); err != nil {
		return BatchResult{}, err
	}
	at := func(i int) Command { return req.Commands[i] }
	return BatchResult{Replies: e.runBatch(ctx, len(req.Commands), at, req.Parallel)}, nil
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
func (e *Executor) runBatch(ctx context.Context, n int, at func(int) Command, parallel bool) []Reply {
	replies := make([]Reply, n)
	if parallel {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range n {
			c := at(i)
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
		if c.err != nil && (c.name == "publish" || c.name == "broadcast") {
			// It publishes nothing, so the stretch goes on past it.
			replies[i] = e.runCommand(ctx, &c)
			continue
		}
		if c.err == nil && (c.Publish != nil || c.Broadcast != nil) {
			if err := g.add(i, &c); err != nil {
				// It publishes nothing, so the stretch goes on past it.
				replies[i].Error = e.APIError(c.method(), err)
			}
			continue
		}
		g.publish(e, replies)
		replies[i] = e.runCommand(ctx, &c)
	}
	g.publish(e, replies)
	return replies
}

// runCommand runs one command of a batch.
func (e *Executor) runCommand(ctx context.Context, c *Command) Reply {
	if c.err != nil {
		e.badCommand(c.name, c.err)
		return Reply{Error: c.err}
	}
	name, res, err := e.run(ctx, c)
	if err != nil {
		return Reply{Error: e.APIError(name, err)}
	}
	return Reply{Method: name, Result: res}
}

// method names the method of c: "" when it has no request.
func (c *Command) method() string {
	switch {
	case c.Publish != nil:
		return "publish"
	case c.Broadcast != nil:
		return "broadcast"
	case c.Subscribe != nil:
		return "subscribe"
	case c.Unsubscribe != nil:
		return "unsubscribe"
	case c.Disconnect != nil:
		return "disconnect"
	case c.Refresh != nil:
		return "refresh"
	case c.Presence != nil:
		return "presence"
	case c.PresenceStats != nil:
		return "presence_stats"
	case c.History != nil:
		return "history"
	case c.HistoryRemove != nil:
		return "history_remove"
	case c.Channels != nil:
		return "channels"
	case c.Info != nil:
		return "info"
	case c.RPC != nil:
		return "rpc"
	}
	return c.name
}

// run runs the method of c and returns its name, result and error (not
// yet mapped by APIError).
func (e *Executor) run(ctx context.Context, c *Command) (name string, res any, err error) {
	switch {
	case c.Publish != nil:
		res, err = box(e.Publish(ctx, c.Publish))
	case c.Broadcast != nil:
		res, err = box(e.Broadcast(ctx, c.Broadcast))
	case c.Subscribe != nil:
		res, err = box(e.Subscribe(ctx, c.Subscribe))
	case c.Unsubscribe != nil:
		res, err = box(e.Unsubscribe(ctx, c.Unsubscribe))
	case c.Disconnect != nil:
		res, err = box(e.Disconnect(ctx, c.Disconnect))
	case c.Refresh != nil:
		res, err = box(e.Refresh(ctx, c.Refresh))
	case c.Presence != nil:
		res, err = box(e.Presence(ctx, c.Presence))
	case c.PresenceStats != nil:
		res, err = box(e.PresenceStats(ctx, c.PresenceStats))
	case c.History != nil:
		res, err = box(e.History(ctx, c.History))
	case c.HistoryRemove != nil:
		res, err = box(e.HistoryRemove(ctx, c.HistoryRemove))
	case c.Channels != nil:
		res, err = box(e.Channels(ctx, c.Channels))
	case c.Info != nil:
		res, err = box(e.Info(ctx, c.Info))
	case c.RPC != nil:
		res, err = box(e.RPC(ctx, c.RPC))
	default:
		return c.name, nil, errMethodNotFound
	}
	return c.method(), res, err
}

// box gives a method's result as any, and no result with an error.
func box[Res any](res Res, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}
