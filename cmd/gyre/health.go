package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
)

// healthCmd asks a running server's health endpoint whether the node can
// serve. Images without a shell or curl (FROM scratch) run it as their
// health check, so it answers with the exit code: 0 for 200, 1 otherwise.
func healthCmd(args []string, stdout io.Writer) error {
	fs := newFlagSet("health")
	url := fs.String("url", "", "health endpoint `URL`; default: from the config (http://127.0.0.1:8000/health on the defaults)")
	path := fs.String("c", "", "config `file` whose http_server and health keys give the URL")
	fs.StringVar(path, "config", "", "same as -c")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("health: unexpected argument %q", fs.Arg(0))
	}
	target, derived := *url, false
	if target == "" {
		var err error
		if target, err = healthURLFromConfig(*path); err != nil {
			return fmt.Errorf("health: %w", err)
		}
		derived = true
	}
	status, err := getHealth(target, *timeout, derived)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s: %s\n", target, status)
	return err
}

// healthURLFromConfig is where the server of the config at path (or, with
// no path, of the defaults the server runs on without one) answers its
// health check, both with the environment applied as the server applies it.
func healthURLFromConfig(path string) (string, error) {
	src := config.Sources{File: path, Environ: os.Environ()}
	if path == "" {
		src.Base = func(c *config.Config) { server.DevDefaults(c) }
	}
	cfg, _, err := config.Resolve(src)
	if err != nil {
		return "", err
	}
	if !cfg.Health.Enabled {
		where := "the defaults"
		if path != "" {
			where = path
		}
		return "", fmt.Errorf("health.enabled is off in %s: the server serves no health endpoint (turn it on, or give --url)", where)
	}
	return healthURL(cfg.HTTPServer, cfg.Health.HandlerPrefix)
}

// healthURL follows the server's own choice of port and TLS: the health
// endpoint is on the internal port when there is one, and that port has
// TLS when internal_tls is on, or tls is on without tls_external.
func healthURL(hs config.HTTPServer, prefix string) (string, error) {
	host, port, tlsOn := hs.Address, hs.Port, hs.TLS.Enabled
	if hs.InternalPort != 0 {
		port = hs.InternalPort
		if hs.InternalAddress != "" {
			host = hs.InternalAddress
		}
		tlsOn = hs.InternalTLS.Enabled || (hs.TLS.Enabled && !hs.TLSExternal)
	}
	if port == 0 {
		return "", errors.New("the server listens on a port it picks (http_server.port 0): give --url")
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(localHost(host), strconv.Itoa(port)) + prefix, nil
}

// localHost is the address to reach a server listening on host from the
// same machine: the loopback address for a wildcard one.
func localHost(host string) string {
	switch strings.Trim(host, "[]") {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// getHealth asks url and returns its status line when it is 200. A URL
// derived from the config points at a loopback address, which the
// server's certificate does not name, so its certificate is not verified
// there: the check sends nothing secret and reads only a status.
func getHealth(url string, timeout time.Duration, derived bool) (string, error) {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	if derived {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.Status, nil
}
