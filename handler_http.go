package gyre

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/gyrehq/gyre/protocol"
)

// Helpers shared by the HTTP handlers: request bodies, CORS and origin
// checks, allowed methods, and the ConnectRequest of unidirectional
// clients.

// defaultMaxRequestBodySize bounds request bodies (and cf_connect values)
// of the HTTP transports when their config leaves it zero.
const defaultMaxRequestBodySize = 64 << 10

// errBodyTooLarge is returned by readBody for a body over the limit.
var errBodyTooLarge = errors.New("gyre: request body too large")

// readBody reads the whole request body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errBodyTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errBodyTooLarge
		}
		return nil, fmt.Errorf("gyre: read request body: %w", err)
	}
	return body, nil
}

// bodyError answers a request whose body could not be read.
func bodyError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBodyTooLarge) {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "cannot read request body", http.StatusBadRequest)
}

// isProtobufBody tells whether a request body is binary (protobuf), as the
// SDK marks it.
func isProtobufBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/octet-stream")
}

// cors checks a request's origin and sets the CORS headers for allowed
// ones. It answers preflight requests (OPTIONS) and refused origins itself
// and then returns false.
type cors struct {
	check   func(r *http.Request) bool
	methods string
}

func newCORS(allowed []string, methods string) cors {
	return cors{check: OriginChecker(allowed), methods: methods}
}

func (c cors) handle(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin != "" {
		if c.check != nil && !c.check(r) {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return false
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
	}
	if r.Method != http.MethodOptions {
		return true
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", c.methods)
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", "300")
	w.WriteHeader(http.StatusNoContent)
	return false
}

// allowMethods answers 405 unless the request's method is one of methods.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", ")+", OPTIONS")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// OriginChecker returns a check of the request's Origin header against
// allowed ("*" allows all; entries may hold "*" wildcards). Requests
// without an Origin (not from a browser) and same-host requests pass.
func OriginChecker(allowed []string) func(r *http.Request) bool {
	for _, a := range allowed {
		if a == "*" {
			return nil
		}
	}
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" {
			return true
		}
		u, err := url.Parse(origin)
		if err != nil {
			return false
		}
		if strings.EqualFold(u.Host, r.Host) {
			return true
		}
		o := strings.ToLower(origin)
		for _, a := range allowed {
			if ok, _ := path.Match(strings.ToLower(a), o); ok {
				return true
			}
		}
		return false
	}
}

// errMalformedConnect is returned for a connect request that is not a JSON
// object.
var errMalformedConnect = errors.New("gyre: malformed connect request")

// decodeConnectRequest reads the ConnectRequest JSON of a unidirectional
// client; empty input is an empty request.
func decodeConnectRequest(d protocol.CommandDecoder, data []byte) (*protocol.ConnectRequest, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return &protocol.ConnectRequest{}, nil
	}
	if data[0] != '{' {
		return nil, errMalformedConnect
	}
	// The protocol package decodes whole commands: the request goes in as
	// the connect of one. Anything else that ends up set means the input
	// was not a single object.
	wrapped := make([]byte, 0, len(data)+12)
	wrapped = append(wrapped, `{"connect":`...)
	wrapped = append(wrapped, data...)
	wrapped = append(wrapped, '}')
	cmd, err := d.DecodeCommand(protocol.TypeJSON, wrapped)
	if err != nil {
		return nil, errors.Join(errMalformedConnect, err)
	}
	if cmd.Connect == nil || cmd.Id != 0 || cmd.Send != nil || !isEmptyCommand(cmd) {
		return nil, errMalformedConnect
	}
	return cmd.Connect, nil
}
