package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/protobuf/proto"
)

// maxResponseSize bounds a backend's answer, so that a runaway backend
// cannot make the server buffer without end.
const maxResponseSize = 16 << 20

// httpCaller posts JSON to one URL, whatever the call.
type httpCaller struct {
	endpoint   string
	client     *http.Client
	transforms []StatusTransform
	static     http.Header
}

func newHTTPCaller(cfg Config) *httpCaller {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg.TLS
	// Every client event of a busy server is a request to the same host:
	// keep enough idle connections that they are reused, not redialled.
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	h := &httpCaller{endpoint: cfg.Endpoint, client: &http.Client{Transport: t}, transforms: cfg.StatusTransforms}
	if len(cfg.StaticHeaders) > 0 {
		h.static = make(http.Header, len(cfg.StaticHeaders))
		for k, v := range cfg.StaticHeaders {
			h.static.Set(k, v)
		}
	}
	return h
}

func (h *httpCaller) call(ctx context.Context, _ string, req, resp proto.Message, hdr map[string]string) error {
	body, err := marshalJSON(req.ProtoReflect())
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	// The operator's fixed headers (a backend's credentials, say) win
	// over what a client sent; the body's type is the proxy's own.
	for k, v := range h.static {
		r.Header[k] = v
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := h.client.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	responseStatus(ctx, res.StatusCode)
	if res.StatusCode != http.StatusOK {
		// Read a little of the body so that the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		for _, t := range h.transforms {
			if t.StatusCode == res.StatusCode {
				if t.Disconnect != nil {
					return &transformed{status: res.StatusCode, err: t.Disconnect}
				}
				return &transformed{status: res.StatusCode, err: t.Error}
			}
		}
		return fmt.Errorf("unexpected status %d", res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseSize+1))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if len(data) > maxResponseSize {
		return fmt.Errorf("response larger than %d bytes", maxResponseSize)
	}
	if err := unmarshalJSON(data, resp.ProtoReflect()); err != nil {
		return fmt.Errorf("malformed response body: %w", err)
	}
	return nil
}

// transformed is an HTTP status turned into the client's error or
// disconnect by a status transform.
type transformed struct {
	status int
	err    error // *gyre.Error or *gyre.Disconnect
}

func (t *transformed) Error() string { return fmt.Sprintf("status %d: %v", t.status, t.err) }
func (t *transformed) Unwrap() error { return t.err }
