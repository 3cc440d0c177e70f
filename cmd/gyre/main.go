// Command gyre runs the Gyre real-time messaging server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/token"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gyre:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gyre", flag.ContinueOnError)
	var path string
	fs.StringVar(&path, "c", "", "config file (JSON, YAML or TOML)")
	fs.StringVar(&path, "config", "", "config file (JSON, YAML or TOML)")
	overrides := map[string]*string{}
	for _, key := range []string{"http_server.port", "http_server.address", "log.level", "client.insecure", "http_api.insecure", "admin.enabled", "health.enabled", "prometheus.enabled", "engine.type"} {
		overrides[key] = fs.String(key, "", "set "+key)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := config.Default()
	var warnings []string
	if path != "" {
		var err error
		if cfg, warnings, err = config.Load(path); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if p, ok := overrides[f.Name]; ok && *p != "" {
			if err := cfg.Set(f.Name, *p); err != nil {
				warnings = append(warnings, err.Error())
			}
		}
	})
	log := newLogger(cfg.Log.Level)
	for _, w := range warnings {
		log.Warn(w)
	}
	dev := path == ""
	var secret, apiKey string
	if dev {
		secret, apiKey = server.DevDefaults(cfg)
	}
	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	if dev {
		srv.EnableDemo()
	}
	if err := srv.Start(); err != nil {
		return err
	}
	if dev {
		if err := printDevWelcome(srv, secret, apiKey); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown.Timeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// printDevWelcome tells someone who started gyre without a config how to
// try it: a demo page with a token, and the API key.
func printDevWelcome(srv *server.Server, secret, apiKey string) error {
	tok, err := token.SignHMAC("HS256", []byte(secret), map[string]any{
		"sub": "demo",
		"exp": time.Now().Add(24 * time.Hour).Unix(),
	})
	if err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	_, port, _ := net.SplitHostPort(srv.Addr().String())
	fmt.Printf(`Gyre is running with development defaults (no config file given).

  Demo page:  http://localhost:%[1]s/?token=%[2]s
  Token:      %[2]s   (user "demo", valid 24h)
  API key:    %[3]s
  Publish:    curl -X POST -H "X-API-Key: %[3]s" -d '{"channel":"demo","data":{"text":"hi"}}' http://localhost:%[1]s/api/publish

Secrets are new at every start. Run "gyre -c config.json" to use your own.
`, port, tok, apiKey)
	return nil
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "none":
		return slog.New(slog.DiscardHandler)
	case "trace", "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error", "fatal":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
