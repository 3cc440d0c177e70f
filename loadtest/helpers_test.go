package loadtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/token"
)

const (
	testSecret = "loadtest-secret"
	testKey    = "loadtest-key"
	// workerEnv makes the test binary a child process of a run.
	workerEnv = "GYRE_LOADTEST_WORKER"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := RunWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// workerCommand starts this test binary as a child process of a run.
func workerCommand(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"env", workerEnv + "=1", exe}
}

// testServer is a real Gyre server on a loopback port.
type testServer struct {
	ws, api string
	peers   *peerLog
	node    *gyre.Node
	// wsRequests counts the requests to the WebSocket endpoint,
	// apiRequests those to the API.
	wsRequests, apiRequests *atomic.Int64
	// stop shuts the node down (its clients are disconnected) and closes
	// its listener; the test's end does it too.
	stop func()
}

// peerLog counts the requests from each client IP address.
type peerLog struct {
	mu   sync.Mutex
	seen map[string]int
}

func (l *peerLog) add(remoteAddr string) {
	host, _, _ := net.SplitHostPort(remoteAddr)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[host]++
}

func (l *peerLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.seen)
}

func startServer(t *testing.T) testServer {
	t.Helper()
	return startServerWith(t, nil)
}

// startServerWith starts a server whose config change adjusts.
func startServerWith(t *testing.T, change func(*config.Config)) testServer {
	t.Helper()
	return startServerNode(t, change, nil)
}

// startServerNode is startServerWith with setup called on the node
// before it runs (to set its event handlers).
func startServerNode(t *testing.T, change func(*config.Config), setup func(*gyre.Node)) testServer {
	t.Helper()
	c := config.Default()
	c.Client.Token.HMACSecretKey = testSecret
	c.HTTPAPI.Key = testKey
	c.Channel.WithoutNamespace.AllowSubscribeForClient = true
	if change != nil {
		change(c)
	}
	s, err := server.New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(s.Node())
	}
	if err := s.Node().Run(); err != nil {
		t.Fatal(err)
	}
	peers := &peerLog{seen: map[string]int{}}
	wsRequests, apiRequests := &atomic.Int64{}, &atomic.Int64{}
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peers.add(r.RemoteAddr)
		switch {
		case r.URL.Path == wsPath:
			wsRequests.Add(1)
		case strings.HasPrefix(r.URL.Path, "/api/"):
			apiRequests.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	stop := sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Node().Shutdown(ctx)
		srv.Close()
	})
	t.Cleanup(stop)
	base := strings.TrimPrefix(srv.URL, "http://")
	return testServer{ws: "ws://" + base + wsPath, api: "http://" + base + "/api", peers: peers, node: s.Node(),
		wsRequests: wsRequests, apiRequests: apiRequests, stop: stop}
}

const wsPath = "/connection/websocket"

// config is a small run against the server: 20 connections, a second.
func (s testServer) config() Config {
	return Config{
		URL:        s.ws,
		API:        s.api,
		APIKey:     testKey,
		HMACSecret: testSecret,
		Conns:      20,
		Duration:   time.Second,
		PIDs:       []int{os.Getpid()},
	}
}

func signTest(t *testing.T, user string) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(testSecret), map[string]any{"sub": user, "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// syncWriter lets the progress goroutine and the test share a buffer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// checkErr fails unless err is as expected: containing want, or nil when
// want is empty. It reports whether err was an expected error, after
// which the case has nothing more to check.
func checkErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want %q", err, want)
	}
	return true
}
