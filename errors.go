package gyre

import (
	"errors"
	"fmt"
)

// Error is an error sent to a client in a reply. Codes below 400 belong to
// Gyre; 400–1999 are free for applications (return an *Error from a
// handler to send it as is).
type Error struct {
	Code      uint32
	Message   string
	Temporary bool
}

var _ error = (*Error)(nil)

func (e *Error) Error() string {
	return fmt.Sprintf("gyre: error %d: %s", e.Code, e.Message)
}

// Errors of the client protocol. Handlers may return them; any other error
// returned by a handler reaches the client as ErrorInternal, so internals
// never leak.
var (
	ErrorInternal              = &Error{Code: 100, Message: "internal server error", Temporary: true}
	ErrorUnauthorized          = &Error{Code: 101, Message: "unauthorized"}
	ErrorUnknownChannel        = &Error{Code: 102, Message: "unknown channel"}
	ErrorPermissionDenied      = &Error{Code: 103, Message: "permission denied"}
	ErrorMethodNotFound        = &Error{Code: 104, Message: "method not found"}
	ErrorAlreadySubscribed     = &Error{Code: 105, Message: "already subscribed"}
	ErrorLimitExceeded         = &Error{Code: 106, Message: "limit exceeded"}
	ErrorBadRequest            = &Error{Code: 107, Message: "bad request"}
	ErrorNotAvailable          = &Error{Code: 108, Message: "not available"}
	ErrorTokenExpired          = &Error{Code: 109, Message: "token expired"}
	ErrorExpired               = &Error{Code: 110, Message: "expired"}
	ErrorTooManyRequests       = &Error{Code: 111, Message: "too many requests", Temporary: true}
	ErrorUnrecoverablePosition = &Error{Code: 112, Message: "unrecoverable position"}
	// ErrorConcurrentPagination: a map subscriber asked for a page while
	// its previous one was still being read.
	ErrorConcurrentPagination = &Error{Code: 113, Message: "concurrent pagination", Temporary: true}
)

// ErrNotHandled, returned by a subscribe, publish or RPC handler, makes
// the node decide the command as if no handler were set: channel rules
// and tokens for subscribe and publish, 108 for RPC. It lets one handler
// serve some namespaces and leave the others to their configuration.
var ErrNotHandled = errors.New("gyre: not handled")

// toError turns any error returned by a handler or a broker into the Error
// the client sees.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return ErrorInternal
}

// causedError is e to errors.Is and errors.As, so that a client is sent e,
// and says its cause in its text and to errors.Unwrap, so that whoever
// logs the failure can tell why.
type causedError struct {
	e     *Error
	cause error
}

func (c *causedError) Error() string   { return c.cause.Error() }
func (c *causedError) Unwrap() []error { return []error{c.e, c.cause} }
