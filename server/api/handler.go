package api

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gyrehq/gyre"
)

// Config configures the API handler.
type Config struct {
	// Key is the API key clients must present; with Insecure false and an
	// empty Key every request is refused.
	Key string
	// Insecure accepts requests without a key.
	Insecure bool
	// TransportErrorMode answers errors with HTTP statuses instead of 200.
	TransportErrorMode bool
	// MaxBodySize caps a request body; 0 means 16 MiB.
	MaxBodySize int64
	// MaxBatchSize caps the commands of one batch; 0 means 100,000.
	MaxBatchSize int
	// Prefix is the URL path the methods are under; "" means "/api".
	Prefix string
	Logger *slog.Logger
	// OnCall, when set, is told about every API call: its method, its error
	// code (0 for success) and how long it took.
	OnCall func(method string, code uint32, d time.Duration)
}

// Handler serves the API of one node.
type Handler struct {
	node  *gyre.Node
	cfg   Config
	log   *slog.Logger
	fails *failureLog
}

// NewHandler creates the API handler for n.
func NewHandler(n *gyre.Node, cfg Config) *Handler {
	if cfg.MaxBodySize == 0 {
		cfg.MaxBodySize = 16 << 20
	}
	if cfg.MaxBatchSize == 0 {
		cfg.MaxBatchSize = 100_000
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/api"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{node: n, cfg: cfg, log: log, fails: newFailureLog(log)}
}

// method runs one API method on a raw JSON request.
type method func(h *Handler, raw json.RawMessage) (any, error)

var methods map[string]method

func init() {
	methods = map[string]method{
		"publish":        (*Handler).publish,
		"broadcast":      (*Handler).broadcast,
		"subscribe":      (*Handler).subscribe,
		"unsubscribe":    (*Handler).unsubscribe,
		"disconnect":     (*Handler).disconnect,
		"refresh":        (*Handler).refresh,
		"presence":       (*Handler).presence,
		"presence_stats": (*Handler).presenceStats,
		"history":        (*Handler).history,
		"history_remove": (*Handler).historyRemove,
		"channels":       (*Handler).channels,
		"info":           (*Handler).info,
		"batch":          (*Handler).batch,
	}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.Trim(strings.TrimPrefix(r.URL.Path, h.cfg.Prefix), "/")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "api: use POST", http.StatusMethodNotAllowed)
		return
	}
	if !h.authorized(r) {
		h.log.Info("api request with a wrong or missing key", "remote", r.RemoteAddr, "method", clip(name))
		http.Error(w, "api: unauthorized", http.StatusUnauthorized)
		return
	}
	// No method in the path: the legacy form, whose body names them.
	legacy := name == ""
	m, ok := methods[name]
	if !ok && !legacy {
		h.refuse(w, r, http.StatusNotFound, "unknown method", "method", clip(name))
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	asked := r.Header.Get("X-Centrifugo-Error-Mode") == "transport"
	if legacy {
		// Only a request that asks for it gets the transport error mode:
		// Centrifugo answers the legacy form in the default mode whatever
		// http_api.error_mode says, and the clients that send it expect
		// their errors in a 200.
		h.serveLegacy(w, r, body, asked)
		return
	}
	transportMode := h.cfg.TransportErrorMode || asked
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		h.refuse(w, r, http.StatusBadRequest, "malformed JSON", "method", name)
		return
	}
	start := time.Now()
	res, err := m(h, body)
	h.write(w, name, res, err, transportMode, start)
}

// readBody reads the body of r up to the limit, refusing it (with a log
// line) when it is over the limit or not UTF-8.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodySize))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.refuse(w, r, http.StatusRequestEntityTooLarge, "request body too large", "limit", mbe.Limit)
			return nil, false
		}
		h.refuse(w, r, http.StatusBadRequest, "read body: "+err.Error())
		return nil, false
	}
	// encoding/json would quietly turn bad UTF-8 into U+FFFD, making
	// channel names and payloads the sender never wrote.
	if !utf8.Valid(body) {
		h.refuse(w, r, http.StatusBadRequest, "malformed JSON: not valid UTF-8")
		return nil, false
	}
	return body, true
}

// refuse answers a request that cannot run at all with status and a
// plain-text reason, and logs it at info level: it is the sender's fault,
// and a sender that keeps sending it fills the log with its lines only as
// far as failureLog lets it.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, reason string, attrs ...any) {
	h.fails.add("refused", slog.LevelInfo, "api request refused",
		append([]any{"status", status, "reason", reason, "remote", r.RemoteAddr}, attrs...)...)
	http.Error(w, "api: "+reason, status)
}

// clip shortens a string of the request for a log line.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

func (h *Handler) authorized(r *http.Request) bool {
	if h.cfg.Insecure {
		return true
	}
	if h.cfg.Key == "" {
		return false
	}
	key := r.Header.Get("X-API-Key")
	if key == "" {
		if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "apikey ") {
			key = a[7:]
		}
	}
	if key == "" {
		key = r.URL.Query().Get("api_key")
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(h.cfg.Key)) == 1
}

func (h *Handler) write(w http.ResponseWriter, name string, res any, err error, transportMode bool, start time.Time) {
	var out reply
	var body any = &out
	status := http.StatusOK
	switch {
	case err != nil:
		out.Error = h.toAPIError(name, err)
		// A batch response is its replies alone, with no place for an
		// error: a batch that cannot run is refused at the HTTP level.
		if transportMode || name == "batch" {
			status, body = httpStatus(out.Error.Code), out.Error
		}
	case name == "batch":
		// The v6 API answers a batch with {"replies":[...]}, not wrapped
		// in "result"; its client libraries read it so.
		body = res
	default:
		out.Result = res
	}
	h.send(w, name, status, body)
	h.called(name, out.Error, start)
}

// send writes body as the JSON response.
func (h *Handler) send(w http.ResponseWriter, name string, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
	if err := json.NewEncoder(w).Encode(body); err != nil {
		h.log.Debug("api: write response", "method", name, "error", err)
	}
}

// called tells Config.OnCall about a call that began at start.
func (h *Handler) called(name string, e *apiError, start time.Time) {
	if h.cfg.OnCall == nil {
		return
	}
	var code uint32
	if e != nil {
		code = e.Code
	}
	h.cfg.OnCall(name, code, time.Since(start))
}

func httpStatus(code uint32) int {
	switch code {
	case 102, 104:
		return http.StatusNotFound
	case 107, 108:
		return http.StatusBadRequest
	case 112:
		return http.StatusRequestedRangeNotSatisfiable
	default:
		return http.StatusInternalServerError
	}
}

// toAPIError maps the error of method to its API error: unknown errors
// are hidden behind 100.
func (h *Handler) toAPIError(method string, err error) *apiError {
	return h.failed(method, "", err)
}

// failed is toAPIError for a failure about channel (none when ""). An
// internal error (100) is logged at error level, naming the method, the
// channel and the cause, which the reply does not tell; failures by the
// thousand (the broker down) are summed up rather than logged one by one.
func (h *Handler) failed(method, channel string, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		if ae.Code == errBadRequest.Code || ae.Code == errMethodNotFound.Code {
			h.badCommand(method, ae)
		}
		return ae
	}
	var ge *gyre.Error
	if errors.As(err, &ge) {
		ae = &apiError{Code: ge.Code, Message: ge.Message}
	} else {
		ae = errInternal
	}
	if ae.Code == errInternal.Code {
		attrs := []any{"method", method}
		if channel != "" {
			attrs = append(attrs, "channel", channel)
		}
		kind := method
		if _, ok := methods[method]; !ok {
			kind = "other" // the kinds must stay a fixed set
		}
		h.fails.add(kind, slog.LevelError, "api method failed", append(attrs, "error", err)...)
	}
	return ae
}

// badCommand logs a command the API could not run as asked (104, 107) at
// info level: the sender's fault, which its reply tells it.
func (h *Handler) badCommand(method string, ae *apiError) {
	h.fails.add("bad command", slog.LevelInfo, "api bad command", "method", clip(method), "error", ae.Message)
}

func decode(raw json.RawMessage, v any) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	// Name the field in the request's terms, not the Go type it was
	// decoded into.
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return &apiError{107, "bad request: the request must be a JSON object"}
		}
		return &apiError{107, fmt.Sprintf("bad request: %s: %s is not a %s", requestPath(v, te.Field), te.Value, te.Type.Kind())}
	}
	return &apiError{107, "bad request: " + err.Error()}
}

// requestPath drops from the Go path of a decoding error the names of
// the request type's embedded structs, which the request does not have.
func requestPath(v any, field string) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var path []string
	for seg := range strings.SplitSeq(field, ".") {
		if len(path) == 0 && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(seg); ok && f.Anonymous {
				t = f.Type
				continue
			}
		}
		path = append(path, seg)
	}
	return strings.Join(path, ".")
}

func (h *Handler) batch(raw json.RawMessage) (any, error) {
	var req batchRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if len(req.Commands) > h.cfg.MaxBatchSize {
		return nil, &apiError{107, "bad request: too many commands in batch"}
	}
	at := func(i int) command {
		cmd := req.Commands[i]
		if len(cmd) != 1 {
			return command{err: errBadRequest}
		}
		var c command
		for c.name, c.body = range cmd {
		}
		c.m, c.err = batchMethod(c.name)
		return c
	}
	return batchResult{Replies: h.runBatch(len(req.Commands), at, req.Parallel)}, nil
}

// command is one command of a batch as read from the request: its method
// and request, or why it cannot run.
type command struct {
	name string // as the request names it; for the log when err is set
	m    method
	body json.RawMessage
	err  *apiError
}

// batchMethod looks up the method of a command in a batch: any but batch
// itself.
func batchMethod(name string) (method, *apiError) {
	m, ok := methods[name]
	if !ok || name == "batch" {
		return nil, errMethodNotFound
	}
	return m, nil
}

// runBatch runs n commands, at(i) giving the i-th (called once for each, in
// order), and returns their replies in the same order. The v6 batch and
// the legacy form's several commands both run here.
func (h *Handler) runBatch(n int, at func(int) command, parallel bool) []batchReply {
	replies := make([]batchReply, n)
	if parallel {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range n {
			c := at(i)
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				replies[i] = h.runCommand(c)
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
		if c.err == nil && (c.name == "publish" || c.name == "broadcast") {
			if err := g.add(i, c); err != nil {
				// It publishes nothing, so the stretch goes on past it.
				replies[i].err = h.toAPIError(c.name, err)
			}
			continue
		}
		g.publish(h, replies)
		replies[i] = h.runCommand(c)
	}
	g.publish(h, replies)
	return replies
}

// runCommand runs one command of a batch.
func (h *Handler) runCommand(c command) batchReply {
	if c.err != nil {
		h.badCommand(c.name, c.err)
		return batchReply{err: c.err}
	}
	res, err := c.m(h, c.body)
	if err != nil {
		return batchReply{err: h.toAPIError(c.name, err)}
	}
	return batchReply{method: c.name, result: res}
}
