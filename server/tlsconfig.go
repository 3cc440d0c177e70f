package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/gyrehq/gyre/server/config"
)

// pemValue picks the form of a PEM setting that wins when several are set:
// the file, then base64, then inline PEM (as docs/config.md says).
func pemValue(inline, b64, file string) ([]byte, error) {
	for _, v := range []string{file, b64, inline} {
		if v != "" {
			return config.ReadPEM(v)
		}
	}
	return nil, nil
}

// clientTLS builds the TLS config used towards a backend (Redis): the CA
// to verify it, a client certificate when given, server name and
// verification switch. It returns nil when TLS is off.
func clientTLS(t config.TLS) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	out := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	pool, err := certPool(t.ServerCAPEM, t.ServerCAPEMB64, t.ServerCAPEMFile)
	if err != nil {
		return nil, fmt.Errorf("server CA: %w", err)
	}
	out.RootCAs = pool
	pair, err := keyPair(t)
	if err != nil {
		return nil, err
	}
	if pair != nil {
		out.Certificates = []tls.Certificate{*pair}
	}
	return out, nil
}

// listenTLS builds the TLS configs of the client port and of the internal
// port from the http_server keys: tls covers both ports unless
// tls_external keeps the internal one plain, and internal_tls, when
// enabled, is the internal port's own. Nil means plain.
func listenTLS(hs config.HTTPServer) (external, internal *tls.Config, err error) {
	if external, err = serverTLS(hs.TLS); err != nil {
		return nil, nil, fmt.Errorf("http_server.tls: %w", err)
	}
	switch {
	case hs.InternalTLS.Enabled:
		if internal, err = serverTLS(hs.InternalTLS); err != nil {
			return nil, nil, fmt.Errorf("http_server.internal_tls: %w", err)
		}
	case !hs.TLSExternal:
		internal = external
	}
	return external, internal, nil
}

// serverTLS builds the TLS config of a listening port: its certificate
// and, with a client CA, the requirement that clients show a certificate
// it signed. It returns nil when TLS is off.
func serverTLS(t config.TLS) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	pair, err := keyPair(t)
	if err != nil {
		return nil, err
	}
	if pair == nil {
		return nil, errors.New("a certificate and key are required")
	}
	out := &tls.Config{Certificates: []tls.Certificate{*pair}, MinVersion: tls.VersionTLS12}
	pool, err := certPool(t.ClientCAPEM, t.ClientCAPEMB64, t.ClientCAPEMFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	if pool != nil {
		out.ClientCAs = pool
		out.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return out, nil
}

// keyPair loads t's certificate and key; nil when neither is set.
func keyPair(t config.TLS) (*tls.Certificate, error) {
	cert, err := pemValue(t.CertPEM, t.CertPEMB64, t.CertPEMFile)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	key, err := pemValue(t.KeyPEM, t.KeyPEMB64, t.KeyPEMFile)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if cert == nil && key == nil {
		return nil, nil
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("certificate and key: %w", err)
	}
	return &pair, nil
}

// certPool loads a CA setting into a pool; nil when it is not set.
func certPool(inline, b64, file string) (*x509.CertPool, error) {
	ca, err := pemValue(inline, b64, file)
	if err != nil || ca == nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no certificate in PEM")
	}
	return pool, nil
}
