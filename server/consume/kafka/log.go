package kafka

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/server/consume"
)

// logger writes the client's log lines to the consumer's logger. Its info
// lines (joins, assignments, every connection) go to debug, and its
// warnings and errors through a faillog: while a broker is down the
// client says so at every dial.
type logger struct {
	log   *slog.Logger
	fails *faillog.Log
}

func newLogger(l *slog.Logger) *logger {
	return &logger{log: l, fails: faillog.New(l)}
}

func (l *logger) Level() kgo.LogLevel {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

// reported are the client's lines that say what the hooks report to the
// dispatcher already, which logs them.
var reported = map[string]bool{
	"unable to open connection to broker": true,
	"group manage loop errored":           true,
}

func (l *logger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if reported[msg] {
		level = kgo.LogLevelDebug
	}
	switch level {
	case kgo.LogLevelError:
		// The client's messages are fixed strings: a bounded set of kinds.
		l.fails.Add(msg, slog.LevelError, "kafka client: "+msg, keyvals...)
	case kgo.LogLevelWarn:
		l.fails.Add(msg, slog.LevelWarn, "kafka client: "+msg, keyvals...)
	default:
		l.log.Debug("kafka client: "+msg, keyvals...)
	}
}

// hooks tell the dispatcher whether the consumer reaches its brokers.
type hooks struct{ d *consume.Dispatcher }

var (
	_ kgo.HookBrokerConnect    = hooks{}
	_ kgo.HookGroupManageError = hooks{}
)

func (h hooks) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.d.SourceFailed("connect to broker "+net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))), err)
		return
	}
	h.d.SourceOK()
}

func (h hooks) OnGroupManageError(err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
		return // the consumer stops
	}
	h.d.SourceFailed("consumer group session", err)
}
