package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/gyrehq/gyre/server/config"
)

// pemValue picks the first set form of a PEM setting: inline, base64 or a
// file.
func pemValue(inline, b64, file string) ([]byte, error) {
	for _, v := range []string{inline, b64, file} {
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
	ca, err := pemValue(t.ServerCAPEM, t.ServerCAPEMB64, t.ServerCAPEMFile)
	if err != nil {
		return nil, fmt.Errorf("server CA: %w", err)
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("server CA: no certificate in PEM")
		}
		out.RootCAs = pool
	}
	cert, err := pemValue(t.CertPEM, t.CertPEMB64, t.CertPEMFile)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	key, err := pemValue(t.KeyPEM, t.KeyPEMB64, t.KeyPEMFile)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if cert != nil || key != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("certificate and key: %w", err)
		}
		out.Certificates = []tls.Certificate{pair}
	}
	return out, nil
}
