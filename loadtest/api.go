package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const apiTimeout = 30 * time.Second

// apiClient calls the server HTTP API over kept-alive connections.
type apiClient struct {
	base string
	key  string
	hc   *http.Client
}

func newAPIClient(base, key string, conns int) *apiClient {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &apiClient{base: strings.TrimSuffix(base, "/"), key: key, hc: &http.Client{Transport: tr, Timeout: apiTimeout}}
}

func (a *apiClient) close() { a.hc.CloseIdleConnections() }

// newAPIClients makes a client per API base URL, each able to keep a
// connection per publisher.
func newAPIClients(bases []string, key string, publishers int) []*apiClient {
	out := make([]*apiClient, len(bases))
	for i, b := range bases {
		out[i] = newAPIClient(b, key, publishers)
	}
	return out
}

func closeAPIClients(apis []*apiClient) {
	for _, a := range apis {
		a.close()
	}
}

// apiError is an error the API answered with.
type apiError struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) String() string { return fmt.Sprintf("api error %d %s", e.Code, e.Message) }

// apiReply holds the parts of the replies of publish, broadcast and
// batch that tell success from failure.
type apiReply struct {
	Error  *apiError `json:"error"`
	Result *struct {
		Responses []struct {
			Error *apiError `json:"error"`
		} `json:"responses"`
	} `json:"result"`
	Replies []struct {
		Error *apiError `json:"error"`
	} `json:"replies"`
}

// call posts body to method and decodes the reply, reading it into buf
// (kept by the caller between calls).
func (a *apiClient) call(ctx context.Context, method string, body []byte, buf *bytes.Buffer) (*apiReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("loadtest: api %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		req.Header.Set("X-API-Key", a.key)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("loadtest: api %s: %w", method, err)
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("loadtest: api %s: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadtest: api %s: status %d: %.200s", method, resp.StatusCode, bytes.TrimSpace(buf.Bytes()))
	}
	var r apiReply
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("loadtest: api %s: reply: %w", method, err)
	}
	return &r, nil
}
