package gyreproc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// apiHTTP carries the calls of the server API; the limit is a hang guard
// for a node on a loaded machine, not a timing assertion.
var apiHTTP = &http.Client{Timeout: 30 * time.Second}

// APIError is an error the server API answered with; a test tells it from
// a failed request with errors.As.
type APIError struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

func (e *APIError) Error() string { return fmt.Sprintf("api error %d: %s", e.Code, e.Message) }

// Call posts body to the API method of n with its API key and returns the
// result: the whole reply for "batch", which has no result of its own,
// else the reply's result. An error is a failed request, an HTTP status
// other than 200, or an *APIError.
func (n *Node) Call(method string, body any) (json.RawMessage, error) {
	return n.CallWithHeader(method, body, nil)
}

// CallWithHeader is Call with header added to the request (a traceparent,
// say).
func (n *Node) CallWithHeader(method string, body any, header http.Header) (json.RawMessage, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", method, err)
	}
	req, err := http.NewRequest(http.MethodPost, n.Base+"/api/"+method, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("X-API-Key", n.apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := apiHTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: read reply: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, out)
	}
	if method == "batch" {
		return out, nil
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *APIError       `json:"error"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("%s: decode %q: %w", method, out, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: %w", method, r.Error)
	}
	return r.Result, nil
}

// MustCall is Call that fails the test on an error; the result goes into
// out unless out is nil.
func (n *Node) MustCall(t testing.TB, method string, body, out any) {
	t.Helper()
	res, err := n.Call(method, body)
	if err != nil {
		t.Fatalf("node %s: %v", n.Name, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("node %s: %s: decode result %s: %v", n.Name, method, res, err)
		}
	}
}
