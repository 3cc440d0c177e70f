package api

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre"
)

// Config configures the API: Logger, MaxBatchSize and RPC are the
// Executor's (and so shared with the gRPC API when it runs on the same
// Executor), the other fields the HTTP handler's.
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
	// Logger logs failed calls (without flooding the log); nil logs
	// nothing.
	Logger *slog.Logger
	// OnCall, when set, is told about every API call: its method, its error
	// code (0 for success) and how long it took.
	OnCall func(method string, code uint32, d time.Duration)
	// RPC serves the rpc method (POST <prefix>/rpc, and rpc commands of a
	// batch). Nil answers every rpc call with 104 "not found", as
	// Centrifugo does for a method no extension serves. In the server
	// this is where the RPC proxy plugs in (server.New).
	RPC RPCFunc
	// SharedPoll, when set, reports whether channel is in a shared_poll
	// namespace: publish and broadcast refuse those channels with 107,
	// as their subscribers get the values of tracked keys, never
	// publications (shared_poll_publish sets a key). Nil refuses none.
	SharedPoll func(channel string) bool
	// TracerProvider, when set, traces the HTTP API: a SERVER span per
	// request, named "POST <prefix>/<method>" ("POST <prefix>" for the
	// legacy form), continuing the trace of the request's W3C traceparent
	// header. Nil traces nothing and reads no trace header. The
	// executor, whoever calls it, names the method and channels on the
	// span of its ctx and passes that span's context to its publications.
	TracerProvider trace.TracerProvider
}

// Handler serves the API of one node over HTTP: it decodes JSON, runs
// the method on its Executor and encodes the answer.
type Handler struct {
	exec *Executor
	cfg  Config
	log  *slog.Logger
	// tracer is nil when the handler does not trace.
	tracer trace.Tracer
	// spanNames are the span names of the methods' paths.
	spanNames map[string]string
}

// NewHandler creates the API handler for n, with an Executor of its own.
func NewHandler(n *gyre.Node, cfg Config) *Handler {
	return NewHandlerFor(NewExecutor(n, cfg), cfg)
}

// NewHandlerFor creates the API handler that runs the methods on exec,
// which other APIs (gRPC) may share; exec keeps its own Logger,
// MaxBatchSize and RPC.
func NewHandlerFor(exec *Executor, cfg Config) *Handler {
	if cfg.MaxBodySize == 0 {
		cfg.MaxBodySize = 16 << 20
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/api"
	}
	h := &Handler{exec: exec, cfg: cfg, log: exec.log}
	if cfg.TracerProvider != nil {
		h.tracer = cfg.TracerProvider.Tracer(tracerName)
		h.spanNames = make(map[string]string, len(methodTable)+1)
		h.spanNames[""] = http.MethodPost + " " + cfg.Prefix
		for _, m := range methodTable {
			h.spanNames[m.Name] = http.MethodPost + " " + cfg.Prefix + "/" + m.Name
		}
	}
	return h
}

// Executor is the executor h runs the methods on.
func (h *Handler) Executor() *Executor { return h.exec }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.Trim(strings.TrimPrefix(r.URL.Path, h.cfg.Prefix), "/")
	if h.tracer != nil {
		h.serveTraced(w, r, name)
		return
	}
	h.serve(w, r, name)
}

// serve answers a request for method name ("" for the legacy form).
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, name string) {
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
	if !legacy && lookup(name) == nil {
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
	res, err := h.call(r.Context(), name, body)
	ae := h.write(w, name, res, err, transportMode, start)
	if h.tracer != nil {
		TraceError(trace.SpanFromContext(r.Context()), ae)
	}
}

// call decodes the JSON request of method name and runs it.
func (h *Handler) call(ctx context.Context, name string, body json.RawMessage) (any, error) {
	m := lookup(name)
	req, err := m.decodeJSON(body)
	if err != nil {
		return nil, err
	}
	return h.exec.run(ctx, m, req)
}

// readBody reads the body of r up to the limit, refusing it (with a log
// line) when it is over the limit or not UTF-8.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	mw := w
	if sw, ok := w.(*statusWriter); ok {
		// The server's own writer, which MaxBytesReader tells to close
		// the connection after a body over the limit.
		mw = sw.ResponseWriter
	}
	body, err := readAll(http.MaxBytesReader(mw, r.Body, h.cfg.MaxBodySize), r.ContentLength, h.cfg.MaxBodySize)
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
// far as the failure log (internal/faillog) lets it.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, reason string, attrs ...any) {
	h.exec.fails.Add("refused", slog.LevelInfo, "api request refused",
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

// write answers the call of method name with res or err, and returns the
// error it answered (nil for a result).
func (h *Handler) write(w http.ResponseWriter, name string, res any, err error, transportMode bool, start time.Time) *Error {
	var out reply
	var body any = &out
	status := http.StatusOK
	switch {
	case err != nil:
		out.Error = h.exec.APIError(name, err)
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
	return out.Error
}

// send writes body as the JSON response.
func (h *Handler) send(w http.ResponseWriter, name string, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	if b, ok := appendResponse(body); ok {
		h.sendJSON(w, name, status, b)
		return
	}
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
	if err := json.NewEncoder(w).Encode(body); err != nil {
		h.log.Debug("api: write response", "method", name, "error", err)
	}
}

// jsonAppender is a response that writes its own JSON, as encoding/json
// would, without reflection and without the Encoder's second pass over
// what a Marshaler wrote: those with thousands of items (a batch's
// replies, a broadcast's responses).
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
	// jsonSizeHint is about the length of that JSON.
	jsonSizeHint() int
}

// appendResponse is body's JSON and a newline, as json.Encoder writes
// it, when body (or the result of a reply without error) is a
// jsonAppender; ok is false otherwise, and encoding/json writes it.
func appendResponse(body any) (b []byte, ok bool) {
	prefix, suffix := "", "\n"
	if r, isReply := body.(*reply); isReply {
		if r.Error != nil {
			return nil, false
		}
		body, prefix, suffix = r.Result, `{"result":`, "}\n"
	}
	a, ok := body.(jsonAppender)
	if !ok {
		return nil, false
	}
	b = make([]byte, 0, len(prefix)+a.jsonSizeHint()+len(suffix))
	b, err := a.appendJSON(append(b, prefix...))
	if err != nil {
		return nil, false
	}
	return append(b, suffix...), true
}

// sendJSON writes b, a response written by hand.
func (h *Handler) sendJSON(w http.ResponseWriter, name string, status int, b []byte) {
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
	if _, err := w.Write(b); err != nil {
		h.log.Debug("api: write response", "method", name, "error", err)
	}
}

// called tells Config.OnCall about a call that began at start.
func (h *Handler) called(name string, e *Error, start time.Time) {
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

func decode(raw json.RawMessage, v any) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var ae *Error
	if errors.As(err, &ae) {
		// From a request's own UnmarshalJSON, which named the field.
		return ae
	}
	// Name the field in the request's terms, not the Go type it was
	// decoded into.
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return &Error{107, "bad request: the request must be a JSON object"}
		}
		return typeMismatch(requestPath(v, te.Field), te.Value, te.Type.Kind().String())
	}
	return &Error{107, "bad request: " + err.Error()}
}

// typeMismatch is the error for a value (what: "string", "number 5"...)
// where the request's field takes a Go kind.
func typeMismatch(field, what, kind string) *Error {
	return &Error{107, fmt.Sprintf("bad request: %s: %s is not a %s", field, what, kind)}
}

// readAll reads r to its end into a buffer of the size the request
// declared (up to max, and up to readAhead before the bytes come),
// rather than one grown by doubling from 512 bytes, which allocated twice
// a batch's size.
func readAll(r io.Reader, declared, max int64) ([]byte, error) {
	if declared <= 0 || declared > max {
		return io.ReadAll(r)
	}
	var buf bytes.Buffer
	// ReadFrom keeps MinRead bytes free as it reads: with that much more
	// it reaches the end without growing.
	buf.Grow(int(min(declared, readAhead)) + bytes.MinRead)
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// readAhead bounds what readAll takes on a request's word: a body
// declared larger grows as it arrives.
const readAhead = 1 << 20

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

// batchCommand decodes the command of method name in a batch: any method
// but batch itself. A command that cannot run carries why.
func batchCommand(name string, body json.RawMessage) Command {
	m := lookup(name)
	if m == nil || name == "batch" {
		return Command{name: name, err: errMethodNotFound}
	}
	req, err := m.decodeJSON(body)
	if err != nil {
		var ae *Error
		if !errors.As(err, &ae) {
			ae = errBadRequest
		}
		return Command{name: name, err: ae}
	}
	return Command{method: m, req: req, name: name}
}
