package nats

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Config says how the broker reaches NATS and names its subjects.
type Config struct {
	// URL of the NATS server, or several separated by commas
	// ("nats://a:4222,nats://b:4222"); "" means nats://127.0.0.1:4222.
	URL string
	// Prefix starts every subject ("gyre"), so that several setups can
	// share one NATS.
	Prefix string
	// DialTimeout bounds a connection attempt (2s when 0); WriteTimeout a
	// write to NATS (1s when 0), and the round trip that confirms a
	// subscription.
	DialTimeout  time.Duration
	WriteTimeout time.Duration
	// TLS, when set, is used towards NATS.
	TLS *tls.Config
	// Name is the connection's name as NATS shows it (monitoring).
	Name string
	// RawMode maps channels to plain subjects carrying bare data.
	RawMode RawMode
	// NamespaceBoundary and PrivatePrefix are the engine's channel rules
	// (":" and "$" when empty): a channel's subject has its pattern scope
	// (namespace) as one token and the dot-separated name after it as the
	// others, so that pattern subscriptions map onto subject wildcards.
	NamespaceBoundary string
	PrivatePrefix     string
	// Store keeps the channels' history, offsets, idempotency results and
	// versions: Redis (redisnats) or JetStream. Without one, the broker
	// keeps none and refuses publications that need it. The broker closes
	// it on Close.
	Store broker.Store
	// ReorderWait is how long a publication that arrived ahead of its
	// predecessor (two nodes publishing into one channel at once) waits
	// for it before the broker reads the missing ones from the Store
	// (100ms when 0).
	ReorderWait time.Duration
	// Workers is the number of goroutines handing received publications
	// to the engine, each serving a share of the channels (2×GOMAXPROCS
	// when 0).
	Workers int
	// QueueSize is how many messages each worker may have waiting before
	// NATS's client drops what comes next and the broker reports the loss
	// (65536 when 0).
	QueueSize int
	Logger    *slog.Logger
}

// RawMode maps a channel to the subject Prefix + the channel (after
// ChannelReplacements), carrying a publication's bare data both ways and
// nothing else (no join/leave, no history), for systems that publish
// into NATS themselves.
type RawMode struct {
	Enabled bool
	Prefix  string
	// ChannelReplacements replaces substrings of a channel name in its
	// subject ({":": "."}); the concrete channel of a message received on
	// a pattern's subject is found by replacing back.
	ChannelReplacements map[string]string
}

func (c *Config) setDefaults() error {
	if c.URL == "" {
		c.URL = "nats://127.0.0.1:4222"
	}
	if c.Prefix == "" {
		c.Prefix = "gyre"
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 2 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = time.Second
	}
	if c.NamespaceBoundary == "" {
		c.NamespaceBoundary = ":"
	}
	if c.PrivatePrefix == "" {
		c.PrivatePrefix = "$"
	}
	if c.ReorderWait <= 0 {
		c.ReorderWait = 100 * time.Millisecond
	}
	if c.Workers <= 0 {
		c.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 65536
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if strings.ContainsAny(c.Prefix, " \t\r\n*>") || strings.HasPrefix(c.Prefix, ".") || strings.HasSuffix(c.Prefix, ".") {
		return fmt.Errorf("nats broker: prefix %q is not a subject", c.Prefix)
	}
	if c.RawMode.Enabled {
		if c.Store != nil {
			return errors.New("nats broker: raw mode carries bare data, without the offsets history needs: it cannot have a store")
		}
		for from := range c.RawMode.ChannelReplacements {
			if from == "" {
				return errors.New("nats broker: raw_mode.channel_replacements: an empty string cannot be replaced")
			}
		}
	}
	return nil
}
