package pgoutbox_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/consume/pgoutbox/pgtest"
)

// TestTLS: with a TLS config the consumer speaks TLS to PostgreSQL, its
// pool and its LISTEN connection alike, even where the DSN says
// sslmode=disable, and verifies the server's certificate: against the
// wrong CA it does not connect, and says so.
func TestTLS(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	certPEM, keyPEM, pool := selfSigned(t)
	srv.WriteFile(t, "server.crt", certPEM)
	srv.WriteFile(t, "server.key", keyPEM)
	tb := pgtest.NewTable(t, srv.DSN, 1)
	tb.Exec(t, "ALTER SYSTEM SET ssl = on")
	tb.Exec(t, "SELECT pg_reload_conf()")
	pc := tb.Consumer()
	pc.PartitionNotificationChannel = tb.Notify(t)

	t.Run("verified", func(t *testing.T) {
		b := startBareTLS(t, tb.Name, pc, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		rec := record(t, b.node, "p0")
		tb.Insert(t, publishRows(0, 0, 3)...)
		waitFor(t, "3 rows published", func() bool { return len(rec.of("p0")) == 3 })
		var plain, encrypted int
		err := tb.Pool().QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE NOT s.ssl), count(*) FILTER (WHERE s.ssl)
			FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name LIKE 'gyre consumer %'`).Scan(&plain, &encrypted)
		if err != nil {
			t.Fatal(err)
		}
		// At least a partition's connection and the listener's.
		if plain != 0 || encrypted < 2 {
			t.Fatalf("the consumer's connections: %d plain, %d over TLS; want none plain and at least 2 over TLS", plain, encrypted)
		}
	})
	t.Run("unknown CA", func(t *testing.T) {
		_, _, other := selfSigned(t)
		b := startBareTLS(t, tb.Name+"_x", pc, &tls.Config{RootCAs: other, MinVersion: tls.VersionTLS12})
		waitFor(t, "a source error", func() bool { return b.stats().SourceErrors > 0 })
		if st := b.stats(); st.Connected || st.Processed != 0 {
			t.Fatalf("connected %v, processed %d, with a certificate it cannot verify", st.Connected, st.Processed)
		}
	})
}

// selfSigned makes a certificate for 127.0.0.1 and localhost, its key,
// and a pool that trusts it.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "pgtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), pool
}
