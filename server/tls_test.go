package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/server/config"
)

// testCert is a certificate with its key, in PEM, and the parsed form.
type testCert struct {
	certPEM, keyPEM string
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// newTestCert makes a certificate for 127.0.0.1, signed by parent (or by
// itself when parent is nil, as a CA).
func newTestCert(t *testing.T, parent *testCert) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "gyre test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{
		certPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		keyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})),
		cert:    cert,
		key:     key,
	}
}

func (c *testCert) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

func (c *testCert) tlsCert(t *testing.T) tls.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair([]byte(c.certPEM), []byte(c.keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// startTLS runs a server with edit applied to a config whose client port
// has TLS with a certificate from ca, and an internal port.
func startTLS(t *testing.T, ca *testCert, edit func(*config.Config)) (s *Server, external, internal string) {
	t.Helper()
	srvCert := newTestCert(t, ca)
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.HTTPServer.InternalPort = freePort(t)
	c.Health.Enabled = true
	c.HTTPServer.TLS = config.TLS{Enabled: true, CertPEM: srvCert.certPEM, KeyPEM: srvCert.keyPEM}
	if edit != nil {
		edit(c)
	}
	s = start(t, c)
	return s, s.Addr().String(), "127.0.0.1:" + strconv.Itoa(c.HTTPServer.InternalPort)
}

func getWith(t *testing.T, client *http.Client, url string) (int, error) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func TestTLS(t *testing.T) {
	t.Parallel()
	ca := newTestCert(t, nil)
	trusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool()}}}

	t.Run("both ports", func(t *testing.T) {
		_, external, internal := startTLS(t, ca, nil)
		if code, err := getWith(t, trusting, "https://"+internal+"/health"); err != nil || code != 200 {
			t.Errorf("https health on the internal port: %d %v", code, err)
		}
		if code, err := getWith(t, trusting, "http://"+external+"/connection/websocket"); err == nil && code != http.StatusBadRequest {
			t.Errorf("plain HTTP on the TLS port answered %d", code)
		}
		// A WebSocket client over TLS connects and runs commands.
		d := ws.Dialer{Timeout: 5 * time.Second, TLSConfig: &tls.Config{RootCAs: ca.pool()}}
		conn, _, _, err := d.Dial(context.Background(), "wss://"+external+"/connection/websocket")
		if err != nil {
			t.Fatalf("wss dial: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		cl := &rawClient{t: t, conn: conn}
		if r, closed := cl.connect(signToken(t, testSecret, "alice")); closed != 0 || r.Error != nil {
			t.Fatalf("connect over TLS: closed %d, reply %+v", closed, r)
		}
		if code := cl.subscribe("news"); code != 0 {
			t.Fatalf("subscribe over TLS: %d", code)
		}
	})

	t.Run("tls_external leaves the internal port plain", func(t *testing.T) {
		_, _, internal := startTLS(t, ca, func(c *config.Config) { c.HTTPServer.TLSExternal = true })
		if code, err := getWith(t, trusting, "http://"+internal+"/health"); err != nil || code != 200 {
			t.Errorf("plain health on the internal port: %d %v", code, err)
		}
	})

	t.Run("client certificates", func(t *testing.T) {
		_, external, _ := startTLS(t, ca, func(c *config.Config) { c.HTTPServer.TLS.ClientCAPEM = ca.certPEM })
		if _, err := getWith(t, trusting, "https://"+external+"/connection/websocket"); err == nil {
			t.Error("a client without a certificate got an answer")
		}
		clientCert := newTestCert(t, ca)
		withCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: ca.pool(), Certificates: []tls.Certificate{clientCert.tlsCert(t)},
		}}}
		// Not an upgrade: the WebSocket handler refuses it, after TLS let it in.
		if code, err := getWith(t, withCert, "https://"+external+"/connection/websocket"); err != nil || code != http.StatusBadRequest {
			t.Errorf("a client with a certificate: %d %v, want 400 from the WebSocket handler", code, err)
		}
	})

	t.Run("bad key", func(t *testing.T) {
		c := testConfig()
		c.HTTPServer.TLS = config.TLS{Enabled: true, CertPEM: ca.certPEM, KeyPEM: newTestCert(t, nil).keyPEM}
		if _, err := New(c, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "http_server.tls") {
			t.Errorf("New with a key of another certificate: %v", err)
		}
	})
}

// TestPEMPrecedence: a file wins over base64, which wins over inline PEM.
func TestPEMPrecedence(t *testing.T) {
	a, b := newTestCert(t, nil), newTestCert(t, nil)
	dir := t.TempDir()
	certFile, keyFile := dir+"/cert.pem", dir+"/key.pem"
	if err := os.WriteFile(certFile, []byte(a.certPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(a.keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	for _, tt := range []struct {
		name string
		tls  config.TLS
		want *testCert
	}{
		{"file over inline", config.TLS{Enabled: true, CertPEM: b.certPEM, KeyPEM: b.keyPEM, CertPEMFile: certFile, KeyPEMFile: keyFile}, a},
		{"base64 over inline", config.TLS{Enabled: true, CertPEM: b.certPEM, KeyPEM: b.keyPEM, CertPEMB64: b64([]byte(a.certPEM)), KeyPEMB64: b64([]byte(a.keyPEM))}, a},
		{"inline alone", config.TLS{Enabled: true, CertPEM: b.certPEM, KeyPEM: b.keyPEM}, b},
	} {
		cfg, err := serverTLS(tt.tls)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := cfg.Certificates[0].Leaf; got == nil || !got.Equal(tt.want.cert) {
			t.Errorf("%s: served another certificate", tt.name)
		}
	}
}
