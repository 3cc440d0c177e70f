package jetstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/broker"
)

// Defaults of Config.
const (
	DefaultPrefix                 = "gyre"
	DefaultMetaTTL                = 30 * 24 * time.Hour
	DefaultIdempotentResultTTL    = 5 * time.Minute
	DefaultMaxIdempotentResultTTL = 24 * time.Hour
	DefaultTimeout                = 5 * time.Second
	DefaultCacheSize              = 65536
	// maxAttempts bounds how often one publication is sent again after
	// another appender took its place in the channel's stream.
	maxAttempts = 64
)

// Config configures a Store. The zero value connects to nats.DefaultURL.
type Config struct {
	// Conn is an existing connection to use; the store does not close it.
	// Nil: the store connects to URL and closes that connection in Close.
	Conn *nats.Conn
	// URL of the NATS server(s), comma-separated. Empty means
	// nats.DefaultURL. Ignored when Conn is set.
	URL string
	// Prefix starts every subject the store writes (Prefix.s<size>t<ttl>.<channel>),
	// and, upper-cased, every stream name. Empty means "gyre". Stores
	// sharing a prefix share streams.
	Prefix string
	// TLS, when set, is used towards NATS (ignored when Conn is set).
	TLS *tls.Config
	// Replicas of each stream (JetStream clustering). Zero means 1.
	Replicas int
	// MetaTTL is how long a channel's position outlives its last
	// publication when PublishOptions.HistoryMetaTTL is zero, and the
	// longest it can: the age limit of the streams that keep positions
	// (see the package documentation). Zero means 30 days.
	MetaTTL time.Duration
	// IdempotentResultTTL is how long an idempotency key is remembered
	// when PublishOptions.IdempotentResultTTL is zero. Zero means 5
	// minutes.
	IdempotentResultTTL time.Duration
	// MaxIdempotentResultTTL caps PublishOptions.IdempotentResultTTL: the
	// age limit of the stream of idempotency results. Zero means 24 hours.
	MaxIdempotentResultTTL time.Duration
	// Timeout bounds each request to NATS. Zero means 5 seconds.
	Timeout time.Duration
	// CacheSize is how many channels' last positions the store remembers.
	// Zero means 65536.
	CacheSize int
	// Logger receives the store's rare warnings. Nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) fill() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Replicas", int64(c.Replicas)}, {"MetaTTL", int64(c.MetaTTL)},
		{"IdempotentResultTTL", int64(c.IdempotentResultTTL)}, {"MaxIdempotentResultTTL", int64(c.MaxIdempotentResultTTL)},
		{"Timeout", int64(c.Timeout)}, {"CacheSize", int64(c.CacheSize)},
	} {
		if f.v < 0 {
			return fmt.Errorf("jetstream: Config.%s is negative", f.name)
		}
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(c.Prefix, " \t\r\n*>") || strings.HasPrefix(c.Prefix, ".") || strings.HasSuffix(c.Prefix, ".") || strings.Contains(c.Prefix, "..") {
		return fmt.Errorf("jetstream: Config.Prefix %q is not a valid subject prefix", c.Prefix)
	}
	c.Replicas = max(c.Replicas, 1)
	c.MetaTTL = orDefault(c.MetaTTL, DefaultMetaTTL)
	c.IdempotentResultTTL = orDefault(c.IdempotentResultTTL, DefaultIdempotentResultTTL)
	c.MaxIdempotentResultTTL = orDefault(c.MaxIdempotentResultTTL, DefaultMaxIdempotentResultTTL)
	c.Timeout = orDefault(c.Timeout, DefaultTimeout)
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Store is a broker.Store on NATS JetStream. It is safe for concurrent
// use.
type Store struct {
	cfg    Config
	nc     *nats.Conn
	ownNC  bool
	js     js.JetStream
	log    *slog.Logger
	names  names
	cache  *cache
	locks  chanLocks
	closed chan struct{}

	acks *acks

	mu      sync.Mutex
	streams map[string]*streamRef // by stream name
	byTTL   map[time.Duration]*streamRef
}

var _ broker.Store = (*Store)(nil)

// New connects (or takes Config.Conn) and returns a store. Streams are
// created on first use, so New needs no JetStream round trip; it fails
// only on a bad config or when it cannot connect.
func New(cfg Config) (*Store, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	s := &Store{
		cfg:     cfg,
		nc:      cfg.Conn,
		log:     cfg.Logger,
		names:   newNames(cfg.Prefix),
		cache:   newCache(cfg.CacheSize),
		closed:  make(chan struct{}),
		streams: make(map[string]*streamRef),
		byTTL:   make(map[time.Duration]*streamRef),
	}
	if s.nc == nil {
		url := cfg.URL
		if url == "" {
			url = nats.DefaultURL
		}
		// Without a reconnect buffer a publish while NATS is away fails at
		// once instead of waiting for an ack that cannot come.
		opts := []nats.Option{nats.Name("gyre jetstream store"), nats.ReconnectBufSize(-1),
			nats.MaxReconnects(-1), nats.Timeout(cfg.Timeout)}
		if cfg.TLS != nil {
			opts = append(opts, nats.Secure(cfg.TLS))
		}
		nc, err := nats.Connect(url, opts...)
		if err != nil {
			return nil, fmt.Errorf("jetstream: connect %s: %w: %w", url, broker.ErrNotAvailable, err)
		}
		s.nc, s.ownNC = nc, true
	}
	j, err := js.New(s.nc, js.WithDefaultTimeout(cfg.Timeout))
	if err != nil {
		s.closeConn()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	s.js = j
	if s.acks, err = newAcks(s.nc); err != nil {
		s.closeConn()
		return nil, err
	}
	return s, nil
}

// Close releases the store's connection when it made it. Calls after the
// first do nothing.
func (s *Store) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
	}
	close(s.closed)
	s.acks.close()
	s.closeConn()
	return nil
}

func (s *Store) closeConn() {
	if s.ownNC {
		s.nc.Close()
	}
}

var errClosed = errors.New("jetstream: store closed")

// ready fails fast when the store is closed or NATS is away, so that
// callers see broker.ErrNotAvailable rather than a timeout.
func (s *Store) ready() error {
	select {
	case <-s.closed:
		return errClosed
	default:
	}
	if st := s.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("jetstream: connection %s: %w", st, broker.ErrNotAvailable)
	}
	return nil
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.cfg.Timeout)
}

// wrap adds context to err and marks failures to reach JetStream as
// broker.ErrNotAvailable: anything but an answer of the server, and the
// server's own "unavailable" answers (no JetStream, no quorum).
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr *js.APIError
	if errors.As(err, &apiErr) && apiErr.Code != 503 || errors.Is(err, errClosed) || errors.Is(err, broker.ErrNotAvailable) {
		return fmt.Errorf("jetstream: %s: %w", what, err)
	}
	return fmt.Errorf("jetstream: %s: %w: %w", what, broker.ErrNotAvailable, err)
}
