package server

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

const grpcTestKey = "grpc-api-key"

// grpcConfig is testConfig with the gRPC API on a free port.
func grpcConfig(t *testing.T) *config.Config {
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.GRPCAPI.Enabled = true
	c.GRPCAPI.Address = "127.0.0.1"
	c.GRPCAPI.Port = freePort(t)
	c.GRPCAPI.Key = grpcTestKey
	c.Channel.Namespaces = append(c.Channel.Namespaces, config.Namespace{Name: "hist", ChannelOptions: config.ChannelOptions{HistorySize: 10, HistoryTTL: time.Minute}})
	return c
}

func grpcClient(t *testing.T, addr string, creds credentials.TransportCredentials) apipb.CentrifugoApiClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return apipb.NewCentrifugoApiClient(conn)
}

func keyCtx(t *testing.T) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), "authorization", "apikey "+grpcTestKey)
}

// TestGRPCAPI: grpc_api.enabled serves the API on its port, with the key,
// next to the HTTP API, and both run on the same node; it says where it
// listens in the log.
func TestGRPCAPI(t *testing.T) {
	c := grpcConfig(t)
	s, logs := startLogged(t, c)
	addr := s.GRPCAPIAddr().String()
	if s.GRPCAPIAddr().(*net.TCPAddr).Port != c.GRPCAPI.Port {
		t.Fatalf("listens on %s, want port %d", addr, c.GRPCAPI.Port)
	}
	if len(logs.Find(slog.LevelInfo, "listening", map[string]string{"listener": "grpc_api.port", "address": addr})) != 1 {
		t.Errorf("no start-up line for the gRPC API naming %s", addr)
	}
	client := grpcClient(t, addr, insecure.NewCredentials())
	r, err := client.Publish(keyCtx(t), &apipb.PublishRequest{Channel: "hist:a", Data: []byte(`{"via":"grpc"}`)})
	if err != nil || r.GetError() != nil {
		t.Fatalf("publish: %v %v", err, r.GetError())
	}
	if _, err := client.Publish(t.Context(), &apipb.PublishRequest{Channel: "hist:a", Data: []byte(`{}`)}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without the key: %v", err)
	}
	// The HTTP API sees the publication.
	code, body := post(t, "http://"+s.Addr().String()+"/api/history", `{"channel":"hist:a","limit":-1}`)
	if code != 200 || !strings.Contains(body, `"via":"grpc"`) {
		t.Fatalf("history over HTTP: %d %s", code, body)
	}
	// Shutdown stops the gRPC API.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Info(keyCtx(t), &apipb.InfoRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("after shutdown: %v, want Unavailable", err)
	}
}

// TestGRPCAPIEmptyKey: an empty grpc_api.key accepts calls without one,
// as Centrifugo does, and start-up warns about it.
func TestGRPCAPIEmptyKey(t *testing.T) {
	c := grpcConfig(t)
	c.GRPCAPI.Key = ""
	s, logs := startLogged(t, c)
	if len(logs.Find(slog.LevelWarn, "grpc_api.key is empty: the gRPC API accepts calls without a key", nil)) != 1 {
		t.Error("no warning about the empty key")
	}
	client := grpcClient(t, s.GRPCAPIAddr().String(), insecure.NewCredentials())
	if _, err := client.Info(t.Context(), &apipb.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
}

// TestGRPCAPITLS: grpc_api.tls serves over TLS; a plain client is not
// served.
func TestGRPCAPITLS(t *testing.T) {
	ca := newTestCert(t, nil)
	cert := newTestCert(t, ca)
	c := grpcConfig(t)
	c.GRPCAPI.TLS = config.TLS{Enabled: true, CertPEM: cert.certPEM, KeyPEM: cert.keyPEM}
	s := start(t, c)
	addr := s.GRPCAPIAddr().String()
	tlsClient := grpcClient(t, addr, credentials.NewTLS(&tls.Config{RootCAs: ca.pool(), MinVersion: tls.VersionTLS12}))
	r, err := tlsClient.Info(keyCtx(t), &apipb.InfoRequest{})
	if err != nil || len(r.GetResult().GetNodes()) != 1 {
		t.Fatalf("over TLS: %v %v", err, r)
	}
	plain := grpcClient(t, addr, insecure.NewCredentials())
	if _, err := plain.Info(keyCtx(t), &apipb.InfoRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("plain client: %v, want Unavailable", err)
	}
}

// TestGRPCAPIBadTLS: a TLS setting that cannot load fails New, naming
// the key.
func TestGRPCAPIBadTLS(t *testing.T) {
	c := grpcConfig(t)
	c.GRPCAPI.TLS = config.TLS{Enabled: true, CertPEM: "not a cert", KeyPEM: "not a key"}
	_, err := New(c, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "grpc_api.tls") {
		t.Fatalf("New: %v, want an error naming grpc_api.tls", err)
	}
}

// TestGRPCAPIPortTaken: a port in use fails Start, naming grpc_api.
func TestGRPCAPIPortTaken(t *testing.T) {
	first := start(t, grpcConfig(t))
	c := grpcConfig(t)
	c.GRPCAPI.Port = first.GRPCAPIAddr().(*net.TCPAddr).Port
	s, err := New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), "grpc_api") {
		t.Fatalf("Start: %v, want an error naming grpc_api", err)
	}
}
