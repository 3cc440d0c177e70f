package proxy_test

import (
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// tlsBackend serves b over HTTPS and over gRPC with TLS, both with
// httptest's certificate (valid for 127.0.0.1), and returns the two
// endpoints and the certificate as PEM.
func tlsBackend(t *testing.T, b *backend) (httpsURL, grpcURL, caPEM string) {
	hs := httptest.NewUnstartedServer(http.HandlerFunc(b.serveHTTP))
	// The untrusting client's handshake failure is expected.
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	hs.StartTLS()
	t.Cleanup(hs.Close)
	cert := hs.TLS.Certificates[0]
	caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw}))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	proxypb.RegisterCentrifugoProxyServer(gs, &grpcBackend{b: b})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return hs.URL, "grpc://" + ln.Addr().String(), caPEM
}

// TestTLSAndCredentials: proxies reach backends over TLS, trusting the CA
// configured; gRPC calls carry the credentials pair (and are gzipped,
// which the backend decodes).
func TestTLSAndCredentials(t *testing.T) {
	b := newBackend(t)
	defaultAnswers(b)
	httpsURL, grpcURL, caPEM := tlsBackend(t, b)
	ca := config.TLS{Enabled: true, ServerCAPEM: caPEM}

	c := config.Default()
	c.Client.Proxy.Connect = config.EnabledProxy{Enabled: true, Proxy: config.Proxy{Endpoint: httpsURL + "/connect", Timeout: 2 * time.Second}}
	c.Client.Proxy.Connect.HTTP.TLS = ca
	c.Channel.Proxy.Subscribe = config.Proxy{Endpoint: grpcURL, Timeout: 2 * time.Second}
	c.Channel.Proxy.Subscribe.GRPC = config.ProxyGRPC{TLS: ca, CredentialsKey: "authorization", CredentialsValue: "Bearer backend-key", Compression: true}
	c.Channel.Namespaces = []config.Namespace{{Name: "chat", ChannelOptions: config.ChannelOptions{
		SubscribeProxyEnabled: true, SubscribeProxyName: "default", PublishProxyName: "default", SubRefreshProxyName: "default",
		SubscribeStreamProxyName: "default",
	}}}
	g := startGyre(t, c)

	cl, _ := connect(t, g)
	if r := cl.Subscribe(&protocol.SubscribeRequest{Channel: "chat:tls"}); r.Error != nil {
		t.Fatalf("subscribe over gRPC with TLS: %v", r.Error)
	}
	sc := b.waitCalls("subscribe", 1)[0]
	if got := sc.header.Get("Authorization"); got != "Bearer backend-key" {
		t.Errorf("credentials metadata = %q", got)
	}

	// Without the CA the same backends are not trusted: a failure (100)
	// and a log line that says why.
	c2 := config.Default()
	c2.Client.Proxy.Connect = config.EnabledProxy{Enabled: true, Proxy: config.Proxy{Endpoint: httpsURL + "/connect", Timeout: 2 * time.Second}}
	g2 := startGyre(t, c2)
	w := wstest.Dial(t, g2.url, protocol.TypeJSON)
	if r := w.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error == nil || r.Error.Code != 100 {
		t.Fatalf("connect to an untrusted backend = %v, want 100", r.Error)
	}
	errs := g2.log.Find(slog.LevelError, "proxy: call failed", map[string]string{"proxy": "client.proxy.connect"})
	if len(errs) == 0 || !strings.Contains(errs[0].Attr("error"), "certificate") {
		t.Errorf("log of the untrusted backend = %v", errs)
	}
}
