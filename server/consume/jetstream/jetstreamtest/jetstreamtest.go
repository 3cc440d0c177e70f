// Package jetstreamtest provides JetStream streams for the tests of the
// nats_jetstream consumer and of what runs it (the shared consumer suite,
// cluster tests, the bench tool): a fresh stream per place, on a
// nats-server shared by the test binary or on a private one that can be
// killed and restarted with its store.
//
// The shared server is enginetest's, which the engines of consumetest run
// on too: a TestMain calls consumetest.Main to stop it. nats-server comes
// from scripts/install-nats; with GYRE_SKIP_NATS=1 the tests needing it
// skip where it is missing.
package jetstreamtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume/consumetest"
)

// MethodHeader is where Produce puts a message's method: Centrifugo's
// default method_header.
const MethodHeader = "centrifugo-method"

// Source makes places of nats_jetstream consumers: the consumetest.Source
// of the type.
type Source struct{}

var _ consumetest.Source = Source{}

// Type is the consumer type.
func (Source) Type() string { return "nats_jetstream" }

// Open is OpenPlace as consumetest wants it. JetStream streams have no
// partitions: the place has one, whatever is asked.
func (s Source) Open(t testing.TB, partitions int, private bool) consumetest.Place {
	t.Helper()
	return s.OpenPlace(t, private)
}

// OpenPlace makes a fresh stream, on the nats-server shared by the test
// binary (enginetest.SharedNATS, which consumetest.Main stops), or, when
// private, on a server of the test's own that Place.Outage may stop.
func (Source) OpenPlace(t testing.TB, private bool) *Place {
	t.Helper()
	var p *Place
	if private {
		srv := natstest.Start(t)
		p = &Place{URL: srv.URL, Server: srv}
	} else {
		p = &Place{URL: enginetest.SharedNATS(t)}
	}
	p.Stream = NewName("gyretest")
	p.Subject = p.Stream + ".in"
	nc, err := nats.Connect(p.URL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("jetstreamtest: connect to %s: %v", p.URL, err)
	}
	t.Cleanup(nc.Close)
	p.NC = nc
	if p.JS, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: p.Stream, Subjects: []string{p.Stream + ".>"}, Storage: jetstream.FileStorage,
	})
	if err != nil {
		t.Fatalf("jetstreamtest: create stream %s: %v", p.Stream, err)
	}
	if !private {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = p.JS.DeleteStream(ctx, p.Stream)
		})
	}
	return p
}

// Place is a stream to consume: a consumetest.Place, with what the
// package's own tests use besides.
type Place struct {
	// URL is the server's; Server is set on a private place.
	URL    string
	Server *natstest.Server
	// Stream is the stream's name; it holds the subjects Stream.>, and
	// Produce publishes into Subject.
	Stream  string
	Subject string
	// NC and JS are a connection of the place's own, for tests to publish
	// and look at the stream and its consumers.
	NC *nats.Conn
	JS jetstream.JetStream
}

// Consumer is a consumers[] entry reading the place through the durable
// consumer group, from the start of the stream (deliver_policy all), with
// every other key at its default.
func (p *Place) Consumer(name, group string, publicationMode bool) (config.Consumer, bool) {
	return p.ConsumerWith(name, group, func(j map[string]any) {
		j["publication_data_mode"] = map[string]any{"enabled": publicationMode}
	}), true
}

// ConsumerWith is Consumer with the nats_jetstream keys changed by edit
// (a map of the keys as in a JSON configuration file), defaults applied
// as the configuration loader applies them.
func (p *Place) ConsumerWith(name, group string, edit func(keys map[string]any)) config.Consumer {
	js := map[string]any{
		"url":                   p.URL,
		"stream_name":           p.Stream,
		"subjects":              []string{p.Subject},
		"durable_consumer_name": group,
		"deliver_policy":        "all",
	}
	if edit != nil {
		edit(js)
	}
	raw, err := json.Marshal(map[string]any{"consumers": []any{map[string]any{
		"name": name, "enabled": true, "type": "nats_jetstream", "nats_jetstream": js,
	}}})
	if err != nil {
		panic(err)
	}
	c, _, err := config.LoadBytes(raw, config.FormatJSON)
	if err != nil {
		panic(fmt.Sprintf("jetstreamtest: consumer config: %v", err))
	}
	return c.Consumers[0]
}

// Partitions is 1: a stream has no partitions.
func (p *Place) Partitions() int { return 1 }

// UnorderedAcrossNodes is true: nodes bound to one durable consumer split
// its messages with no order between them.
func (p *Place) UnorderedAcrossNodes() bool { return true }

// Produce publishes msgs into the stream in order and returns once the
// stream has stored them all.
func (p *Place) Produce(t testing.TB, partition int, msgs ...consumetest.Msg) {
	t.Helper()
	out := make([]*nats.Msg, len(msgs))
	for i, m := range msgs {
		nm := nats.NewMsg(p.Subject)
		nm.Data = m.Payload
		if m.Method != "" {
			nm.Header.Set(MethodHeader, m.Method)
		}
		for k, v := range m.Headers {
			nm.Header.Set(k, v)
		}
		out[i] = nm
	}
	p.Publish(t, out...)
}

// Publish stores msgs in the stream in order (pipelined, a thousand at
// a time) and returns once the stream has stored them all.
func (p *Place) Publish(t testing.TB, msgs ...*nats.Msg) {
	t.Helper()
	const window = 1000
	for len(msgs) > 0 {
		n := min(window, len(msgs))
		acks := make([]jetstream.PubAckFuture, n)
		for i, m := range msgs[:n] {
			f, err := p.JS.PublishMsgAsync(m)
			if err != nil {
				t.Fatalf("jetstreamtest: publish into %s: %v", p.Stream, err)
			}
			acks[i] = f
		}
		for _, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatalf("jetstreamtest: publish into %s: %v", p.Stream, err)
			case <-time.After(30 * time.Second):
				t.Fatalf("jetstreamtest: publish into %s: no acknowledgement in 30s", p.Stream)
			}
		}
		msgs = msgs[n:]
	}
}

// Outage kills the place's private server, waits d, and starts it again
// with its store, returning once it answers.
func (p *Place) Outage(t testing.TB, d time.Duration) {
	t.Helper()
	if p.Server == nil {
		t.Fatal("jetstreamtest: Outage on the shared server")
	}
	p.Server.Kill()
	time.Sleep(d)
	p.Server.Restart(t)
}

// NewName is a stream or consumer name unique to this run: prefix and a
// counter and random letters, so that test binaries may share a server.
func NewName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%d_%s", prefix, names.Add(1), hex.EncodeToString(b[:]))
}

var names atomic.Int64
