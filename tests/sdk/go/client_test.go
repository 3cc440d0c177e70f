package sdk

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/centrifugal/centrifuge-go"
	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

// waitFor bounds every wait for an event. The machines are shared and slow
// at times; a missing event costs this much, a present one nothing.
const waitFor = 10 * time.Second

// codec is one wire format of the SDK. Data is JSON on both: the JSON client
// embeds it in its frames, the protobuf client carries it as bytes.
type codec struct {
	name string
	new  func(endpoint string, config centrifuge.Config) *centrifuge.Client
}

var codecs = []codec{
	{"json", centrifuge.NewJsonClient},
	{"protobuf", centrifuge.NewProtobufClient},
}

// eachCodec runs f as a parallel subtest per codec.
func eachCodec(t *testing.T, f func(t *testing.T, cd codec)) {
	for _, cd := range codecs {
		t.Run(cd.name, func(t *testing.T) {
			t.Parallel()
			f(t, cd)
		})
	}
}

// events keeps every event of one kind that a client or subscription fires,
// so that a test can wait for one without racing its emission.
type events[T any] struct {
	name string
	mu   sync.Mutex
	list []T
	wake chan struct{} // closed on the next add
}

func (e *events[T]) add(v T) {
	e.mu.Lock()
	e.list = append(e.list, v)
	if e.wake != nil {
		close(e.wake)
		e.wake = nil
	}
	e.mu.Unlock()
}

// mark is the position of the next event, for waits that must not see the
// ones before.
func (e *events[T]) mark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.list)
}

// since returns the events recorded at or after mark.
func (e *events[T]) since(mark int) []T {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]T(nil), e.list[mark:]...)
}

// wait returns the first event at or after mark that match accepts (any
// event when match is nil), failing the test after waitFor.
func (e *events[T]) wait(t *testing.T, mark int, match func(T) bool) T {
	t.Helper()
	var found T
	e.await(t, "no matching "+e.name+" event", func(list []T) bool {
		for _, v := range list[mark:] {
			if match == nil || match(v) {
				found = v
				return true
			}
		}
		return false
	})
	return found
}

// waitN returns the first n events at or after mark.
func (e *events[T]) waitN(t *testing.T, mark, n int) []T {
	t.Helper()
	list := e.await(t, fmt.Sprintf("fewer than %d %s events", n, e.name), func(list []T) bool {
		return len(list)-mark >= n
	})
	return list[mark : mark+n]
}

// await returns the events once done accepts them (called with the lock
// held), failing the test with what after waitFor.
func (e *events[T]) await(t *testing.T, what string, done func([]T) bool) []T {
	t.Helper()
	timeout := time.NewTimer(waitFor)
	defer timeout.Stop()
	for {
		e.mu.Lock()
		if done(e.list) {
			list := append([]T(nil), e.list...)
			e.mu.Unlock()
			return list
		}
		if e.wake == nil {
			e.wake = make(chan struct{})
		}
		wake := e.wake
		e.mu.Unlock()
		select {
		case <-wake:
		case <-timeout.C:
			t.Fatalf("%s within %v; seen: %s", what, waitFor, show(e.since(0)))
		}
	}
}

// show formats events for a failure message, publications with their data
// as text.
func show[T any](list []T) string {
	var b strings.Builder
	for _, v := range list {
		b.WriteString("\n    ")
		switch ev := any(v).(type) {
		case centrifuge.PublicationEvent:
			fmt.Fprintf(&b, "offset=%d data=%s info=%+v tags=%v", ev.Offset, ev.Data, ev.Info, ev.Tags)
		case centrifuge.SubscribedEvent:
			b.WriteString(subscribedString(ev))
		default:
			fmt.Fprintf(&b, "%+v", v)
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// subscribedString formats a subscribed event with its stream position.
func subscribedString(ev centrifuge.SubscribedEvent) string {
	pos := "none"
	if ev.StreamPosition != nil {
		pos = fmt.Sprintf("%d/%q", ev.StreamPosition.Offset, ev.StreamPosition.Epoch)
	}
	return fmt.Sprintf("{recoverable=%v positioned=%v was_recovering=%v recovered=%v position=%s data=%s}",
		ev.Recoverable, ev.Positioned, ev.WasRecovering, ev.Recovered, pos, ev.Data)
}

// client is an SDK client with its events recorded.
type client struct {
	*centrifuge.Client
	connecting   events[centrifuge.ConnectingEvent]
	connected    events[centrifuge.ConnectedEvent]
	disconnected events[centrifuge.DisconnectedEvent]
	errors       events[centrifuge.ErrorEvent]
}

// clientOptions change what newClient makes.
type clientOptions struct {
	user  string // "alice" when empty
	token string // signed for user by the server's key when empty
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	// url is the endpoint; the package's server when empty.
	url string
	// compression offers permessage-deflate.
	compression bool
}

// newClient makes a client of codec for the test's server with short
// reconnect delays, closed at the end of the test.
func newClient(t *testing.T, cd codec, opts clientOptions) *client {
	t.Helper()
	if opts.user == "" {
		opts.user = "alice"
	}
	if opts.token == "" {
		opts.token = token(t, jwt.MapClaims{"sub": opts.user}, "")
	}
	c := &client{
		connecting:   events[centrifuge.ConnectingEvent]{name: "connecting"},
		connected:    events[centrifuge.ConnectedEvent]{name: "connected"},
		disconnected: events[centrifuge.DisconnectedEvent]{name: "disconnected"},
		errors:       events[centrifuge.ErrorEvent]{name: "error"},
	}
	if opts.url == "" {
		opts.url = srv.WSURL
	}
	c.Client = cd.new(opts.url, centrifuge.Config{
		Token:             opts.token,
		Name:              "gyre-sdk-test",
		MinReconnectDelay: 50 * time.Millisecond,
		MaxReconnectDelay: 500 * time.Millisecond,
		NetDialContext:    opts.dial,
		EnableCompression: opts.compression,
	})
	c.OnConnecting(c.connecting.add)
	c.OnConnected(c.connected.add)
	c.OnDisconnected(c.disconnected.add)
	c.OnError(c.errors.add)
	t.Cleanup(c.Close)
	return c
}

// connect connects c and waits until it is connected.
func (c *client) connect(t *testing.T) centrifuge.ConnectedEvent {
	t.Helper()
	mark := c.connected.mark()
	if err := c.Connect(); err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c.connected.wait(t, mark, nil)
}

// disconnectedForGood waits until c is disconnected with code and checks
// that it stays disconnected: a client that would retry goes back to
// connecting after its reconnect delay (50 to 500 ms here), so it is given
// several.
func (c *client) disconnectedForGood(t *testing.T, code uint32) {
	t.Helper()
	ev := c.disconnected.wait(t, 0, nil)
	if ev.Code != code {
		t.Fatalf("disconnected with %+v, want code %d", ev, code)
	}
	time.Sleep(time.Second)
	if st := c.State(); st != centrifuge.StateDisconnected {
		t.Fatalf("state %s after disconnect %d, want %s", st, code, centrifuge.StateDisconnected)
	}
}

// sub is an SDK subscription with its events recorded.
type sub struct {
	*centrifuge.Subscription
	subscribing  events[centrifuge.SubscribingEvent]
	subscribed   events[centrifuge.SubscribedEvent]
	unsubscribed events[centrifuge.UnsubscribedEvent]
	pubs         events[centrifuge.PublicationEvent]
	joins        events[centrifuge.JoinEvent]
	leaves       events[centrifuge.LeaveEvent]
	errors       events[centrifuge.SubscriptionErrorEvent]
}

func newSub(t *testing.T, c *client, channel string, config centrifuge.SubscriptionConfig) *sub {
	t.Helper()
	s := &sub{
		subscribing:  events[centrifuge.SubscribingEvent]{name: "subscribing"},
		subscribed:   events[centrifuge.SubscribedEvent]{name: "subscribed"},
		unsubscribed: events[centrifuge.UnsubscribedEvent]{name: "unsubscribed"},
		pubs:         events[centrifuge.PublicationEvent]{name: "publication"},
		joins:        events[centrifuge.JoinEvent]{name: "join"},
		leaves:       events[centrifuge.LeaveEvent]{name: "leave"},
		errors:       events[centrifuge.SubscriptionErrorEvent]{name: "subscription error"},
	}
	var err error
	s.Subscription, err = c.NewSubscription(channel, config)
	if err != nil {
		t.Fatalf("new subscription to %s: %v", channel, err)
	}
	s.OnSubscribing(s.subscribing.add)
	s.OnSubscribed(s.subscribed.add)
	s.OnUnsubscribed(s.unsubscribed.add)
	s.OnPublication(s.pubs.add)
	s.OnJoin(s.joins.add)
	s.OnLeave(s.leaves.add)
	s.OnError(s.errors.add)
	return s
}

// subscribe subscribes and waits for the subscribed event, failing at once
// with the reason when the subscription ends unsubscribed instead.
func (s *sub) subscribe(t *testing.T) centrifuge.SubscribedEvent {
	t.Helper()
	mark, unsubMark := s.subscribed.mark(), s.unsubscribed.mark()
	if err := s.Subscribe(); err != nil {
		t.Fatalf("subscribe to %s: %v", s.Channel, err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		if got := s.subscribed.since(mark); len(got) > 0 {
			return got[0]
		}
		if ended := s.unsubscribed.since(unsubMark); len(ended) > 0 {
			t.Fatalf("subscription to %s ended unsubscribed: %+v", s.Channel, ended[0])
		}
		if time.Now().After(deadline) {
			t.Fatalf("not subscribed to %s within %v; errors: %s", s.Channel, waitFor, show(s.errors.since(0)))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unsubscribe unsubscribes and waits for the SDK's unsubscribed event:
// centrifuge-go dispatches events from a queue of its own, so without the
// wait that event may arrive after a following subscribe has taken its mark
// and read as the new subscription ending.
func (s *sub) unsubscribe(t *testing.T) {
	t.Helper()
	mark := s.unsubscribed.mark()
	if err := s.Unsubscribe(); err != nil {
		t.Fatalf("unsubscribe from %s: %v", s.Channel, err)
	}
	s.unsubscribed.wait(t, mark, nil)
}

// token signs claims with secret (the server's key when empty).
func token(t *testing.T, claims jwt.MapClaims, secret string) string {
	t.Helper()
	tok, err := gyretest.Token(claims, secret)
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return tok
}

// channel returns a channel name of its own for a test, so that tests never
// see each other's publications.
func channel(prefix string) string {
	return prefix + strings.ToLower(rand.Text()[:12])
}

// publish publishes data into ch through the HTTP API of the package's
// server.
func publish(t *testing.T, ch string, data any) gyretest.StreamPosition {
	t.Helper()
	return publishOn(t, srv, ch, data)
}

// publishOn publishes data into ch through the HTTP API of s.
func publishOn(t *testing.T, s *gyretest.Server, ch string, data any) gyretest.StreamPosition {
	t.Helper()
	pos, err := s.Publish(ch, data)
	if err != nil {
		t.Fatalf("publish into %s: %v", ch, err)
	}
	return pos
}

// ctx is the context of one SDK call.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return c
}

// sameJSON fails the test unless got is JSON equal to want.
func sameJSON(t *testing.T, what string, got []byte, want any) {
	t.Helper()
	wantRaw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: data is not JSON: %q", what, got)
	}
	if err := json.Unmarshal(wantRaw, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: data %s, want %s", what, bytes.TrimSpace(got), wantRaw)
	}
}
