package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxReplySize bounds a backend's reply, which is expected to be "{}".
const maxReplySize = 64 << 10

// httpSender posts batches as JSON to one URL.
type httpSender struct {
	endpoint string
	timeout  time.Duration
	client   *http.Client
	headers  http.Header
	secret   []byte
	b64      bool
}

func newHTTPSender(cfg SenderConfig) *httpSender {
	// The proxies' transport settings, minus their large idle pool: a
	// queue has one request in flight.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg.TLS
	return &httpSender{
		endpoint: cfg.Endpoint,
		timeout:  cfg.Timeout,
		client:   &http.Client{Transport: t},
		headers:  headerMap(cfg.Headers),
		secret:   cfg.Secret,
		b64:      cfg.BinaryEncoding,
	}
}

func (s *httpSender) Send(ctx context.Context, events []Event) error {
	kind, err := batchKind(events)
	if err != nil {
		return err
	}
	body := appendBody(make([]byte, 0, bodySize(events)), kind, events, s.b64)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	for k, v := range s.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if len(s.secret) > 0 {
		req.Header.Set(SignatureHeader, sign(s.secret, time.Now(), body))
	}
	res, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("hooks: post %d %s events: %w", len(events), kind, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxReplySize+1))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("hooks: %w", &statusError{code: res.StatusCode})
	}
	if err != nil {
		return fmt.Errorf("hooks: read reply: %w", err)
	}
	return replyError(data)
}

// replyError reads a backend's reply: an object whose "error", when set,
// refuses the batch; anything else in it ("result") is ignored.
func replyError(data []byte) error {
	if len(data) > maxReplySize {
		return fmt.Errorf("hooks: %w: larger than %d bytes", errBadReply, maxReplySize)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("hooks: %w: not a JSON object: %q", errBadReply, clip(trimmed))
	}
	var r struct {
		Error *struct {
			Code      uint32 `json:"code"`
			Message   string `json:"message"`
			Temporary bool   `json:"temporary"`
		} `json:"error"`
	}
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return fmt.Errorf("hooks: %w: %w", errBadReply, err)
	}
	if e := r.Error; e != nil {
		return fmt.Errorf("hooks: %w", &refusedError{code: e.Code, message: e.Message, temporary: e.Temporary})
	}
	return nil
}

// clip shortens a reply quoted in an error.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
