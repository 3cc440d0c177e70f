package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gyrehq/gyre/internal/memtrim"
	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/token"
)

// parseServeArgs reads -c/--config and --key.path VALUE pairs.
func parseServeArgs(args []string) (path string, flags map[string]string, err error) {
	flags = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return "", nil, fmt.Errorf("unexpected argument %q", a)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "h", "help":
			return "", nil, &helpRequested{text: usageText}
		case "version", "v":
			return "", nil, errVersionRequested
		}
		if !hasValue {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				value = args[i+1]
				i++
			} else if name != "c" && name != "config" {
				value = "true" // a bare boolean flag: --client.insecure
			} else {
				return "", nil, fmt.Errorf("flag %s needs a value", a)
			}
		}
		if name == "c" || name == "config" {
			path = value
			continue
		}
		if !strings.Contains(name, ".") {
			return "", nil, fmt.Errorf("unknown flag %s (config keys look like --http_server.port)", a)
		}
		flags[name] = value
	}
	return path, flags, nil
}

// errVersionRequested is returned by parseServeArgs for --version among
// the server's flags.
var errVersionRequested = errors.New("version requested")

func serve(args []string, stdout, stderr io.Writer) error {
	path, flags, err := parseServeArgs(args)
	if errors.Is(err, errVersionRequested) {
		return printVersion(stdout)
	}
	if err != nil {
		return err
	}
	environ := os.Environ()
	// Without a config file the server runs on development defaults, and
	// the environment and flags are layered over them: setting one key
	// (GYRE_LOG_LEVEL=debug, --log.level debug) changes that key and
	// nothing else. A config file, even an empty one, is what leaves
	// development mode.
	dev := path == ""
	src := config.Sources{File: path, Environ: environ, Flags: flags}
	if dev {
		src.Base = func(c *config.Config) { server.DevDefaults(c) }
	}
	cfg, warnings, err := config.Resolve(src)
	if err != nil {
		return err
	}
	logOut, closeLog, err := openLog(cfg.Log.File, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	log := newLogger(cfg.Log.Level, logOut)
	if cfg.PIDFile != "" {
		if err := os.WriteFile(cfg.PIDFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return fmt.Errorf("pid_file: %w", err)
		}
		defer os.Remove(cfg.PIDFile)
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	var secret, apiKey string
	if dev {
		secret, apiKey = cfg.Client.Token.HMACSecretKey, cfg.HTTPAPI.Key
		msg := "no config file: running on development defaults (open channels, fresh secrets); give one with -c, even an empty {} file, to leave them"
		if env := configEnv(environ); len(env) > 0 {
			log.Warn(msg, "environment_over_defaults", env)
		} else {
			log.Warn(msg)
		}
	}
	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	if dev {
		srv.EnableDemo()
	}
	// Signals are caught before the server listens: once it says it
	// listens, a SIGHUP or SIGTERM must reload or shut down gracefully,
	// not kill the process by the default action.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := srv.Start(); err != nil {
		return err
	}
	trimCtx, stopTrim := context.WithCancel(context.Background())
	defer stopTrim()
	go memtrim.Run(trimCtx, memtrimPeriod, log)
	if dev {
		if err := printDevWelcome(stdout, srv, secret, apiKey); err != nil {
			return err
		}
	}
	return waitSignals(sigs, srv, path, flags, log, cfg.Shutdown.Timeout)
}

// waitSignals reloads the config on SIGHUP and shuts down on SIGINT or
// SIGTERM.
func waitSignals(sigs <-chan os.Signal, srv *server.Server, path string, flags map[string]string, log *slog.Logger, timeout time.Duration) error {
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			reload(srv, path, flags, log)
			continue
		}
		log.Info("shutting down", "signal", sig.String(), "timeout", timeout)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := srv.Shutdown(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			log.Warn("shutdown timed out", "timeout", timeout)
			return nil
		}
		return err
	}
	return nil
}

func reload(srv *server.Server, path string, flags map[string]string, log *slog.Logger) {
	if path == "" {
		log.Warn("SIGHUP ignored: no config file to reload")
		return
	}
	cfg, warnings, err := config.Resolve(config.Sources{File: path, Environ: os.Environ(), Flags: flags})
	if err != nil {
		log.Error("config reload failed; keeping the running config", "error", err)
		return
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	if err := srv.Reload(cfg); err != nil {
		log.Error("config reload failed; keeping the running config", "error", err)
		return
	}
	log.Info("config reloaded", "file", path)
}

// memtrimPeriod is how often the server looks for memory a burst of
// connects left behind (internal/memtrim).
const memtrimPeriod = 5 * time.Second

// configEnv names the variables of environ that may set config keys (those
// with a prefix config.EnvPrefixes lists), so that the log says what was
// layered over the development defaults.
func configEnv(environ []string) []string {
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range config.EnvPrefixes {
			if strings.HasPrefix(name, p+"_") {
				names = append(names, name)
				break
			}
		}
	}
	return names
}

// printDevWelcome tells someone who started gyre without a config how to
// try it: a demo page with a token, and the API key.
func printDevWelcome(w io.Writer, srv *server.Server, secret, apiKey string) error {
	tok, err := token.SignHMAC("HS256", []byte(secret), map[string]any{
		"sub": "demo",
		"exp": time.Now().Add(24 * time.Hour).Unix(),
	})
	if err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	_, port, _ := net.SplitHostPort(srv.Addr().String())
	_, err = fmt.Fprintf(w, `Gyre is running with development defaults (no config file given).

  Demo page:  http://localhost:%[1]s/?token=%[2]s
  Token:      %[2]s   (user "demo", valid 24h)
  API key:    %[3]s
  Publish:    curl -X POST -H "X-API-Key: %[3]s" -d '{"channel":"demo","data":{"text":"hi"}}' http://localhost:%[1]s/api/publish

Secrets are new at every start. Run "gyre -c config.json" to use your own ("gyre genconfig" writes one);
the demo page is served only without a config file.
`, port, tok, apiKey)
	return err
}

// openLog opens log.file for appending, or returns stderr when it is
// empty.
func openLog(path string, stderr io.Writer) (io.Writer, func(), error) {
	if path == "" {
		return stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("log.file: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}

// newLogger logs JSON when stderr is not a terminal (collected logs), text
// otherwise.
func newLogger(level string, w io.Writer) *slog.Logger {
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
	opts := &slog.HandlerOptions{Level: l, ReplaceAttr: durationsAsText}
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// durationsAsText writes a time.Duration attribute as "30s" in the JSON
// log too (slog's JSON handler writes nanoseconds, which read as a bug).
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
