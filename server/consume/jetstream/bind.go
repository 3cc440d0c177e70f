package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ackWait is the AckWait of the durable consumers Gyre makes: how long a
// message delivered to a node that dies waits before another gets it.
// A variable for the tests.
var ackWait = 30 * time.Second

// binding is a durable consumer bound to, and what the batch loop needs
// of its configuration.
type binding struct {
	cons jetstream.Consumer
	// batch is the most messages fetched at once.
	batch int
	// ackWait is the consumer's AckWait: a batch running longer is told
	// in progress every third of it.
	ackWait time.Duration
}

// errStreamMissing marks a stream that does not exist (yet).
var errStreamMissing = errors.New("stream not found")

// session consumes through nc until ctx ends (nil) or nc closes for good;
// it returns a *fatalError for what retrying cannot mend.
func (c *Consumer) session(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return &fatalError{fmt.Errorf("jetstream: %w", err)}
	}
	attempt := 0
	for ctx.Err() == nil {
		if nc.IsClosed() {
			return fmt.Errorf("connection closed: %w", lastError(nc))
		}
		b, err := c.bind(ctx, nc, js)
		var fatal *fatalError
		switch {
		case errors.As(err, &fatal):
			return err
		case errors.Is(err, errStreamMissing):
			c.d.SourceFailed("stream "+strconv.Quote(c.cfg.StreamName)+" not found: it is made by whoever publishes into it; waiting for it", err)
		case err != nil:
			c.d.SourceFailed("bind durable consumer "+strconv.Quote(c.cfg.DurableConsumerName), err)
		}
		if err == nil {
			c.bound.Store(b)
			c.everBound = true
			c.d.SourceOK()
			var fetched atomic.Bool
			err = c.consume(ctx, nc, b, &fetched)
			if err == nil {
				return nil
			}
			c.bound.Store(nil)
			if fetched.Load() {
				attempt = 0
			}
			c.d.SourceFailed("fetch", err)
		}
		if !c.d.Backoff(ctx, attempt) {
			return nil
		}
		attempt++
	}
	return nil
}

// bind finds the durable consumer, making or updating it unless
// use_existing_consumer.
func (c *Consumer) bind(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) (*binding, error) {
	actx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	stream, name := c.cfg.StreamName, c.cfg.DurableConsumerName
	var cons jetstream.Consumer
	var err error
	if c.cfg.UseExistingConsumer {
		cons, err = js.Consumer(actx, stream, name)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound) && !c.everBound:
			return nil, &fatalError{fmt.Errorf("jetstream: durable consumer %q of stream %q does not exist, and use_existing_consumer uses it as it is: create it, or turn use_existing_consumer off to have Gyre make it", name, stream)}
		case errors.Is(err, jetstream.ErrNotPullConsumer):
			return nil, &fatalError{fmt.Errorf("jetstream: durable consumer %q of stream %q is a push consumer; Gyre reads pull consumers", name, stream)}
		}
	} else {
		if err := c.checkSubjects(nc); err != nil {
			return nil, err
		}
		cons, err = js.CreateOrUpdateConsumer(actx, stream, c.consumerConfig())
		if errors.Is(err, jetstream.ErrConsumerMultipleFilterSubjectsNotSupported) {
			return nil, &fatalError{fmt.Errorf("jetstream: several subjects need nats-server 2.10 or later: %w", err)}
		}
		if refused(err) && !c.everBound {
			return nil, &fatalError{fmt.Errorf("jetstream: make durable consumer %q of stream %q: %w", name, stream, err)}
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, errStreamMissing
	case err != nil:
		return nil, err
	}
	info := cons.CachedInfo()
	b := &binding{cons: cons, batch: c.cfg.MaxAckPending, ackWait: info.Config.AckWait}
	if c.cfg.UseExistingConsumer && info.Config.MaxAckPending > 0 {
		b.batch = info.Config.MaxAckPending
	}
	if m := info.Config.MaxRequestBatch; m > 0 && m < b.batch {
		b.batch = m
	}
	if info.Config.AckPolicy == jetstream.AckNonePolicy && !c.everBound {
		c.log.Warn("durable consumer acknowledges nothing (ack policy none): a message fetched by a node that dies is lost",
			"stream", stream, "durable", name)
	}
	return b, nil
}

// refused tells a configuration the server refuses, and will refuse
// again: a bad request (a filter outside the stream's subjects), or a
// durable that cannot take it (its deliver policy cannot change).
// Anything else (a timeout, JetStream not ready) may pass.
func refused(err error) bool {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	return api.Code == 400 || api.ErrorCode == jetstream.JSErrCodeConsumerCreate
}

// consumerConfig is the durable consumer Gyre makes: the configuration
// Centrifugo gives it, so that either can take over the other's.
func (c *Consumer) consumerConfig() jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Name:          c.cfg.DurableConsumerName,
		Durable:       c.cfg.DurableConsumerName,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxAckPending: c.cfg.MaxAckPending,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	}
	if c.cfg.DeliverPolicy == "all" {
		cc.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	// One subject goes in FilterSubject, which servers before 2.10 know;
	// several need FilterSubjects (2.10).
	switch len(c.cfg.Subjects) {
	case 0:
	case 1:
		cc.FilterSubject = c.cfg.Subjects[0]
	default:
		cc.FilterSubjects = c.cfg.Subjects
	}
	return cc
}

// checkSubjects refuses several subjects on a server older than 2.10,
// which would ignore FilterSubjects and deliver the whole stream.
func (c *Consumer) checkSubjects(nc *nats.Conn) error {
	if len(c.cfg.Subjects) < 2 {
		return nil
	}
	v := nc.ConnectedServerVersion()
	if v == "" || versionAtLeast(v, 2, 10) {
		return nil
	}
	return &fatalError{fmt.Errorf("jetstream: several subjects (%s) need nats-server 2.10 or later, and the server is %s: use one subject (wildcards allowed)",
		strings.Join(c.cfg.Subjects, ", "), v)}
}

// versionAtLeast reports whether the server version v ("2.9.10",
// "v2.10.4-beta") is at least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	v = strings.TrimPrefix(v, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

func lastError(nc *nats.Conn) error {
	if err := nc.LastError(); err != nil {
		return err
	}
	return nats.ErrConnectionClosed
}
