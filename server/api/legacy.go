package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// The legacy form of the API is POST <prefix> with the method in the
// body: {"method":"publish","params":{...}}, and optionally "id", which
// the reply repeats. The API libraries written for Centrifugo v2 to v4
// (gocent, cent 3 and 4, phpcent and others) send it, and Centrifugo
// still takes it. A body may hold several commands, JSON objects one after
// another (the libraries put one a line); they run in order as a
// sequential batch does, and the response has one reply a line,
// {"result":...} or {"error":...}, in the same order. Each method runs
// through the same executor as POST <prefix>/<method>.

// legacyCommand is one command of the legacy form.
type legacyCommand struct {
	ID     uint32          `json:"id"`
	Method json.RawMessage `json:"method"`
	Params json.RawMessage `json:"params"`
}

// legacyReply is the answer to one legacy command.
type legacyReply struct {
	ID     uint32 `json:"id,omitempty"`
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// serveLegacy answers a request of the legacy form. A body that cannot be
// read as commands is refused as a whole, before any of them runs.
func (h *Handler) serveLegacy(w http.ResponseWriter, r *http.Request, body []byte, transportMode bool) {
	cmds, err := splitLegacy(body, h.exec.maxBatch)
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) {
			// Too many commands: refused as a batch is, with its error.
			h.exec.fails.Add("refused", slog.LevelInfo, "api request refused", "status", http.StatusBadRequest, "reason", ae.Message, "remote", r.RemoteAddr)
			h.send(w, "", http.StatusBadRequest, ae)
			return
		}
		h.refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	start := time.Now()
	if len(cmds) == 1 {
		h.writeLegacy(w, r, readLegacyCommand(cmds[0], false), transportMode, start)
		return
	}
	ids := make([]uint32, len(cmds))
	at := func(i int) Command {
		lc := readLegacyCommand(cmds[i], true)
		ids[i] = lc.id
		if lc.err != nil {
			return Command{name: lc.name, err: lc.err}
		}
		return batchCommand(lc.name, lc.body)
	}
	// Several commands are a batch, whose replies carry their errors in
	// both error modes.
	if h.tracer != nil {
		trace.SpanFromContext(r.Context()).SetAttributes(AttrMethod.String("batch"), AttrCommands.Int(len(cmds)))
	}
	replies := h.exec.runBatch(r.Context(), len(cmds), at, false)
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	for i, rep := range replies {
		out := legacyReply{ID: ids[i], Error: rep.Error, Result: rep.Result}
		if err := enc.Encode(out); err != nil {
			h.log.Debug("api: write response", "method", "batch", "error", err)
			break
		}
	}
	h.called("batch", nil, start)
}

// writeLegacy runs one command and answers it as POST <prefix>/<method>
// would, except that a result is always under "result" (a batch's too)
// and the command's id is repeated.
func (h *Handler) writeLegacy(w http.ResponseWriter, r *http.Request, c legacyCommandOf, transportMode bool, start time.Time) {
	out := legacyReply{ID: c.id}
	if c.err != nil {
		h.exec.badCommand(c.name, c.err)
		out.Error = c.err
	} else if res, err := h.call(r.Context(), c.name, c.body); err != nil {
		out.Error = h.exec.APIError(c.name, err)
	} else {
		out.Result = res
	}
	if h.tracer != nil {
		TraceError(trace.SpanFromContext(r.Context()), out.Error)
	}
	if out.Error != nil && transportMode {
		h.send(w, c.name, httpStatus(out.Error.Code), out.Error)
	} else {
		h.send(w, c.name, http.StatusOK, out)
	}
	if c.err == nil {
		h.called(c.name, out.Error, start)
	}
}

// splitLegacy splits a body into its commands: JSON objects, with any
// whitespace (blank lines too) between them. Anything else, or more than
// max commands, is an error.
func splitLegacy(body []byte, max int) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var cmds []json.RawMessage
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errors.New("malformed JSON: command " + strconv.Itoa(len(cmds)+1) + ": " + err.Error())
		}
		switch raw[0] {
		case '{':
		case '[':
			return nil, errors.New("a JSON array of commands is the Centrifugo v1 API, which Gyre does not serve; send the commands as JSON objects, one a line")
		default:
			return nil, errors.New("command " + strconv.Itoa(len(cmds)+1) + " is not a JSON object")
		}
		if len(cmds) == max {
			return nil, &Error{107, "bad request: too many commands"}
		}
		cmds = append(cmds, raw)
	}
	if len(cmds) == 0 {
		return nil, errors.New("no command in the body")
	}
	return cmds, nil
}

// legacyCommandOf is one command of the legacy form as read: its method,
// request and id, or why it cannot run.
type legacyCommandOf struct {
	name string
	body json.RawMessage
	id   uint32
	err  *Error
}

// readLegacyCommand reads one command of the legacy form and its id.
// inBatch: the body has several, so that batch cannot be one of them, as
// in a batch.
func readLegacyCommand(raw json.RawMessage, inBatch bool) legacyCommandOf {
	var lc legacyCommand
	if err := decode(raw, &lc); err != nil {
		var ae *Error
		if !errors.As(err, &ae) {
			ae = errBadRequest
		}
		return legacyCommandOf{err: ae}
	}
	name, ae := legacyMethod(lc.Method)
	if ae != nil {
		return legacyCommandOf{name: name, id: lc.ID, err: ae}
	}
	if lookup(name) == nil || (inBatch && name == "batch") {
		return legacyCommandOf{name: name, id: lc.ID, err: errMethodNotFound}
	}
	body := lc.Params
	if len(body) == 0 || string(body) == "null" {
		// As with an empty body to POST <prefix>/<method>.
		body = json.RawMessage("{}")
	}
	return legacyCommandOf{name: name, body: body, id: lc.ID}
}

// legacyMethod reads the method of a legacy command: its name in any case
// ("publish", or "PUBLISH" as protobuf's JSON writes the enum), or its
// number in the enum. A command without one names no method.
func legacyMethod(raw json.RawMessage) (string, *Error) {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", errMethodNotFound
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", &Error{107, "bad request: method: " + err.Error()}
		}
		return strings.ToLower(s), nil
	case raw[0] >= '0' && raw[0] <= '9':
		n, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return string(raw), errMethodNotFound
		}
		m, ok := methodsByLegacy[n]
		if !ok {
			return string(raw), errMethodNotFound
		}
		return m.Name, nil
	}
	return "", &Error{107, "bad request: method: " + string(raw[:min(len(raw), 16)]) + " is not a string"}
}
