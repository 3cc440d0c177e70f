// Package jetstream consumes server API commands from a NATS JetStream
// stream through a durable pull consumer: the nats_jetstream consumer.
//
// # Binding
//
// The stream must exist: whoever publishes into it makes it. While it
// does not, the consumer says so (a source failure naming the stream) and
// looks again with back-off, as it does while NATS is unreachable: the
// stream may be made after Gyre starts. The durable consumer
// durable_consumer_name is made, or updated to the configuration (explicit
// acknowledgement, AckWait 30s, max_ack_pending, deliver_policy, subjects
// as its filter), unless use_existing_consumer is set: it is then used as
// it is, and a stream that exists without it stops the consumer (Run
// returns an error), as does a configuration the server refuses at start.
//
// # Order and acknowledgement
//
// A pump fetches from the durable (pull requests for up to max_ack_pending
// messages, the durable's MaxAckPending with use_existing_consumer) into a
// queue; the batch loop hands everything that has arrived to the
// dispatcher as one batch, acknowledges the messages done, in order, and
// waits until the server has the acknowledgements (a flush), sending them
// again after a reconnection if it had not: an acknowledgement lost with a
// server that restarted would bring its message back after AckWait, after
// later ones. Messages the consumer could not read (a header of publication
// data mode that is not what it must be) are terminated rather than
// acknowledged, so that JetStream's advisory names them. While a batch
// waits for a command that fails for a temporary reason, it and the queue
// behind it are told in progress, so that AckWait does not hand them to
// another node. After the connection was lost, messages JetStream wrote
// to it that never arrived hold back newer ones until they came again
// (see inflight.go).
//
// At shutdown the batch finishes and is acknowledged; the pump lets its
// last pull request end (within a second) rather than cutting it short,
// since a pull request the server still held would take in what is given
// back; then what was fetched but not run is given back (negatively
// acknowledged) in order, to be delivered again at once.
//
// Delivery is at least once: a node that dies between running a batch and
// acknowledging it has the batch delivered again after AckWait, possibly
// to another node and after later messages. Nodes bound to one durable
// share its messages; order then holds per node only.
package jetstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// Timings of the consumer. Variables, not constants, so that the tests of
// the package can shorten them.
var (
	// pullWait is how long one fetch waits for messages when none is
	// there. Fetches are not cut short (see pump): it bounds how long
	// shutdown waits for the last one, and how long a pull request lost
	// with a server that restarted goes unnoticed.
	pullWait = time.Second
	// apiTimeout bounds one JetStream API request (consumer create, info).
	apiTimeout = 5 * time.Second
	// flushTimeout bounds the wait for the server to confirm that it has
	// a batch's acknowledgements.
	flushTimeout = 5 * time.Second
	// lagEvery is how often the lag is read from the consumer's info.
	lagEvery = time.Second
)

// Consumer reads a JetStream stream. Make it with New.
type Consumer struct {
	cfg config.NatsJetStreamConsumer
	tls *tls.Config
	d   *consume.Dispatcher
	log *slog.Logger

	// bound is the durable consumer as last bound, for the lag.
	bound atomic.Pointer[binding]
	// everBound turns a missing durable of use_existing_consumer from a
	// configuration error (at start) into an outage (it was deleted).
	everBound bool
	// lastSeq is the highest stream sequence fetched, by the pump of the
	// moment (one at a time), and heldSince when its queue began holding
	// messages back; see checkInFlight.
	lastSeq   uint64
	heldSince time.Time
	// Buffers of the batch loop, reused batch after batch.
	batch []jetstream.Msg
	msgs  []consume.Message
}

// New makes the consumer of cfg, reaching NATS with tlsCfg when it is not
// nil. It does not connect: Run does, and rides out a NATS that is not
// there yet.
func New(cfg config.NatsJetStreamConsumer, tlsCfg *tls.Config, d *consume.Dispatcher) (consume.Consumer, error) {
	switch {
	case cfg.URL == "":
		return nil, errors.New("jetstream: url is required")
	case cfg.StreamName == "":
		return nil, errors.New("jetstream: stream_name is required")
	case cfg.DurableConsumerName == "":
		return nil, errors.New("jetstream: durable_consumer_name is required")
	case cfg.PublicationDataMode.Enabled && cfg.PublicationDataMode.ChannelsHeader == "":
		return nil, errors.New("jetstream: publication_data_mode.channels_header is required in publication data mode")
	}
	if cfg.MaxAckPending <= 0 {
		cfg.MaxAckPending = 100
	}
	if cfg.CredentialsFile != "" {
		// nats.go reads the file at each connection; a missing one would
		// only show as a connection that never comes up.
		if _, err := os.Stat(cfg.CredentialsFile); err != nil {
			return nil, fmt.Errorf("jetstream: credentials_file: %w", err)
		}
	}
	return &Consumer{
		cfg: cfg, tls: tlsCfg, d: d, log: d.Logger(),
	}, nil
}

// Run consumes until ctx ends; see the package documentation.
func (c *Consumer) Run(ctx context.Context) error {
	c.d.SetLag(-1)
	var wg sync.WaitGroup
	lagCtx, stopLag := context.WithCancel(context.Background())
	wg.Go(func() { c.watchLag(lagCtx) })
	defer func() {
		stopLag()
		wg.Wait()
	}()
	for attempt := 0; ; attempt++ {
		nc, err := c.connect()
		if err != nil {
			return err
		}
		err = c.session(ctx, nc)
		c.bound.Store(nil)
		// The acknowledgements sent last are in the connection's buffer.
		_ = nc.FlushTimeout(flushTimeout)
		nc.Close()
		var fatal *fatalError
		switch {
		case errors.As(err, &fatal):
			return err
		case ctx.Err() != nil:
			return nil
		}
		// The connection closed for good (nats.go gives up on a server
		// that refuses the credentials): dial again from scratch.
		c.d.SourceFailed("nats connection", err)
		if !c.d.Backoff(ctx, attempt) {
			return nil
		}
	}
}

// connect opens the connection, which keeps reconnecting by itself (also
// when the first attempt fails). It fails only on options nats.go refuses.
func (c *Consumer) connect() (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("gyre consumer " + c.d.Name()),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(time.Second),
		// A server that hangs (no TCP reset) is noticed within ~15s
		// rather than nats.go's default of minutes.
		nats.PingInterval(5 * time.Second),
		nats.MaxPingsOutstanding(2),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() {
				// Closed by Run: nothing lost. Closed by nats.go giving
				// up: Run reports it.
				return
			}
			if err == nil {
				err = errors.New("connection lost")
			}
			c.d.SourceFailed("nats connection", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			c.log.Info("consumer reconnected to nats", "url", nc.ConnectedUrlRedacted())
			c.d.SourceOK()
		}),
	}
	switch {
	case c.cfg.CredentialsFile != "":
		opts = append(opts, nats.UserCredentials(c.cfg.CredentialsFile))
	case c.cfg.Username != "":
		opts = append(opts, nats.UserInfo(c.cfg.Username, c.cfg.Password))
	case c.cfg.Token != "":
		opts = append(opts, nats.Token(c.cfg.Token))
	}
	if c.tls != nil {
		opts = append(opts, nats.Secure(c.tls))
	}
	nc, err := nats.Connect(c.cfg.URL, opts...)
	if err != nil {
		return nil, &fatalError{fmt.Errorf("jetstream: connect to %s: %w", c.cfg.URL, err)}
	}
	return nc, nil
}

// fatalError is a failure the consumer cannot get past: Run returns it.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }
