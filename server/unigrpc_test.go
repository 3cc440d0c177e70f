package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
)

// TestUniGRPC: uni_grpc.enabled serves the transport on uni_grpc.address
// and port, over uni_grpc.tls; a server-side subscription and publications
// through the HTTP API reach the consumer; Shutdown ends its stream with a disconnect push 3001.
func TestUniGRPC(t *testing.T) {
	ca := newTestCert(t, nil)
	srvCert := newTestCert(t, ca)
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.UniGRPC = config.UniGRPC{Enabled: true, Address: "127.0.0.1", Port: 0, MaxReceiveMessageSize: 4096,
		TLS: config.TLS{Enabled: true, CertPEM: srvCert.certPEM, KeyPEM: srvCert.keyPEM}}
	s, err := New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return s.Shutdown(ctx)
	}
	t.Cleanup(func() { _ = shutdown() })

	cc, err := grpc.NewClient(s.UniGRPCAddr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.pool()})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := unistreampb.NewCentrifugoUniStreamClient(cc).Consume(ctx, &unistreampb.ConnectRequest{
		Token: signToken(t, testSecret, "uma"),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := stream.Recv()
	if err != nil || p.Connect == nil {
		t.Fatalf("first push %v, %v; want connect", p, err)
	}
	api := "http://" + s.Addr().String() + "/api"
	if code, body := post(t, api+"/subscribe", `{"user":"uma","channel":"news"}`); code != 200 || strings.Contains(body, "error") {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	if p, err := stream.Recv(); err != nil || p.Subscribe == nil || p.Channel != "news" {
		t.Fatalf("push %v, %v; want subscribe to news", p, err)
	}
	if code, body := post(t, api+"/publish", `{"channel":"news","data":{"n":1}}`); code != 200 || strings.Contains(body, "error") {
		t.Fatalf("publish: %d %s", code, body)
	}
	if p, err := stream.Recv(); err != nil || p.Pub == nil || string(p.Pub.Data) != `{"n":1}` {
		t.Fatalf("push %v, %v; want the publication", p, err)
	}

	if err := shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if p, err := stream.Recv(); err != nil || p.Disconnect == nil || p.Disconnect.Code != 3001 {
		t.Fatalf("push %v, %v; want disconnect 3001", p, err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the disconnect: %v, want the end of the stream", err)
	}
}

// TestUniGRPCOff: without uni_grpc.enabled nothing listens for it.
func TestUniGRPCOff(t *testing.T) {
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.UniGRPC.Port = 0
	s := start(t, c)
	if a := s.UniGRPCAddr(); a != nil {
		t.Errorf("uni_grpc listens on %v while disabled", a)
	}
}

// TestUniGRPCClientCA: with uni_grpc.tls.client_ca_pem a consumer must show
// a certificate that CA signed.
func TestUniGRPCClientCA(t *testing.T) {
	ca := newTestCert(t, nil)
	srvCert, clientCert := newTestCert(t, ca), newTestCert(t, ca)
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.UniGRPC = config.UniGRPC{Enabled: true, Address: "127.0.0.1", Port: 0,
		TLS: config.TLS{Enabled: true, CertPEM: srvCert.certPEM, KeyPEM: srvCert.keyPEM, ClientCAPEM: ca.certPEM}}
	s := start(t, c)
	consume := func(certs []tls.Certificate) error {
		cc, err := grpc.NewClient(s.UniGRPCAddr().String(), grpc.WithTransportCredentials(credentials.NewTLS(
			&tls.Config{RootCAs: ca.pool(), Certificates: certs})))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream, err := unistreampb.NewCentrifugoUniStreamClient(cc).Consume(ctx, &unistreampb.ConnectRequest{
			Token: signToken(t, testSecret, "uma"),
		})
		if err != nil {
			return err
		}
		p, err := stream.Recv()
		if err == nil && p.Connect == nil {
			t.Errorf("first push %v, want connect", p)
		}
		return err
	}
	if err := consume([]tls.Certificate{clientCert.tlsCert(t)}); err != nil {
		t.Errorf("with a client certificate: %v", err)
	}
	if err := consume(nil); err == nil {
		t.Error("without a client certificate: connected")
	}
}
