// Package gyretest starts a real gyre process for the Go SDK tests and talks
// to its HTTP API.
//
// The binary comes from GYRE_BIN (scripts/sdk-test builds it once); without it
// Start builds one from the repository, so that a package can be run by hand
// with go test. GYRE_SDK_KEEP=1 keeps each server's config and log.
package gyretest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Credentials of the servers the tests start.
const (
	HMACSecret = "gyre-sdk-test-secret-0123456789abcdef"
	APIKey     = "gyre-sdk-test-apikey"
)

// Options say how to start a server.
type Options struct {
	// Address is the interface to listen on. Empty means 127.0.0.1.
	Address string
	// Port to listen on. Zero picks a free one.
	Port int
	// Config returns the configuration without http_server, which Start
	// fills in. It must enable the health endpoint, which tells when the
	// server is up.
	Config func() map[string]any
	// ReadyTimeout bounds the wait for /health to answer 200. Zero means 15s.
	ReadyTimeout time.Duration
}

// Server is one gyre process with its config and log in a temp dir.
type Server struct {
	Port    int
	Dir     string
	HTTPURL string
	// WSURL is the WebSocket endpoint of the client protocol.
	WSURL string

	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
	binDir  string // a binary built by Start, removed by Stop
}

// Start writes the configuration into a fresh temp dir, starts gyre on it and
// returns once GET /health answers 200. On failure the error carries the log.
func Start(opts Options) (*Server, error) {
	if opts.Address == "" {
		opts.Address = "127.0.0.1"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 15 * time.Second
	}
	port := opts.Port
	if port == 0 {
		p, err := freePort(opts.Address)
		if err != nil {
			return nil, err
		}
		port = p
	}
	bin, binDir, err := binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gyre-sdk-go-")
	if err != nil {
		return nil, err
	}
	cfg := opts.Config()
	cfg["http_server"] = map[string]any{"address": opts.Address, "port": port}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("gyretest: config: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "gyre.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	hostPort := net.JoinHostPort(opts.Address, strconv.Itoa(port))
	s := &Server{
		Port:    port,
		Dir:     dir,
		HTTPURL: "http://" + hostPort,
		WSURL:   "ws://" + hostPort + "/connection/websocket",
		logPath: logPath,
		exited:  make(chan struct{}),
		binDir:  binDir,
	}
	s.cmd = exec.Command(bin, "-c", cfgPath)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Variables meant for another server must not reconfigure this one.
	s.cmd.Env = serverEnv()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("gyretest: start %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitHealthy(opts.ReadyTimeout); err != nil {
		log := s.Log()
		s.Stop()
		return nil, fmt.Errorf("%w; log:\n%s", err, log)
	}
	return s, nil
}

func (s *Server) waitHealthy(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("gyretest: gyre exited before becoming healthy (%v)", s.waitErr)
		default:
		}
		resp, err := client.Get(s.HTTPURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// Whoever answered, it must be our process that listens.
				select {
				case <-s.exited:
					return fmt.Errorf("gyretest: gyre exited (%v), yet %s answers: another server holds port %d", s.waitErr, s.HTTPURL, s.Port)
				default:
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gyretest: gyre not healthy on port %d within %v", s.Port, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log returns what the server has written so far.
func (s *Server) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// Stop ends the process (SIGTERM, SIGKILL after 5s) and removes its temp dir
// unless GYRE_SDK_KEEP is set, in which case it says where the dir is.
func (s *Server) Stop() {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	if s.binDir != "" {
		os.RemoveAll(s.binDir)
	}
	if os.Getenv("GYRE_SDK_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "gyretest: kept config and log of the server on port %d in %s\n", s.Port, s.Dir)
		return
	}
	os.RemoveAll(s.Dir)
}

// APIError is an error answered by the server API.
type APIError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("api error %d: %s", e.Code, e.Message)
}

// API posts body to /api/<method> and decodes the answer's "result" into
// result (when not nil). An error answer is an *APIError.
func (s *Server) API(method string, body, result any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, s.HTTPURL+"/api/"+method, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", APIKey)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("api %s: %w", method, err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("api %s: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("api %s: HTTP %d: %s", method, resp.StatusCode, text)
	}
	var reply struct {
		Result json.RawMessage `json:"result"`
		Error  *APIError       `json:"error"`
	}
	if err := json.Unmarshal(text, &reply); err != nil {
		return fmt.Errorf("api %s: answer is not JSON: %s", method, text)
	}
	if reply.Error != nil {
		return fmt.Errorf("api %s: %w", method, reply.Error)
	}
	if result == nil || len(reply.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(reply.Result, result); err != nil {
		return fmt.Errorf("api %s: result %s: %w", method, reply.Result, err)
	}
	return nil
}

// StreamPosition is a place in a channel's history stream, as the API
// reports it.
type StreamPosition struct {
	Offset uint64 `json:"offset"`
	Epoch  string `json:"epoch"`
}

// Publish publishes data (marshalled to JSON) into channel through the API
// and returns the publication's position (zero without history).
func (s *Server) Publish(channel string, data any) (StreamPosition, error) {
	var res StreamPosition
	err := s.API("publish", map[string]any{"channel": channel, "data": data}, &res)
	return res, err
}

// StreamTop returns the position of the latest publication of channel.
func (s *Server) StreamTop(channel string) (StreamPosition, error) {
	var res StreamPosition
	err := s.API("history", map[string]any{"channel": channel, "limit": 0}, &res)
	return res, err
}

// freePort asks the kernel for an unused port. Another process could take it
// before gyre binds; that shows as a start failure with the log attached.
func freePort(address string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return 0, fmt.Errorf("gyretest: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// serverEnv is the environment of the test process without the variables
// gyre reads as configuration.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GYRE_") || strings.HasPrefix(kv, "CENTRIFUGO_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// binary returns the gyre binary: GYRE_BIN, or one built from the repository
// into a temp dir (returned too, for removal).
func binary() (bin, dir string, err error) {
	if bin := os.Getenv("GYRE_BIN"); bin != "" {
		return bin, "", nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	dir, err = os.MkdirTemp("", "gyre-bin-")
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "gyre")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gyre")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("gyretest: go build ./cmd/gyre in %s: %w\n%s", root, err, out)
	}
	return bin, dir, nil
}

// repoRoot finds the gyre repository above the working directory: the
// directory whose go.mod declares the root module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/gyrehq/gyre\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("gyretest: GYRE_BIN is not set and no gyre repository is above the working directory")
		}
		dir = parent
	}
}
