package hooks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The bodies the package documentation promises, byte for byte.
func TestHTTPBody(t *testing.T) {
	secret := []byte("s3cret")
	b := newBackend(t, "http", secret)
	s := b.newSender(SenderConfig{Secret: secret, Headers: map[string]string{"authorization": "Bearer x", "X-App": "gyre"}})
	ctx := context.Background()

	channels := []Event{
		{ID: "7f3a-12", Kind: KindChannel, Key: "chat:index", Type: TypeOccupied, TimeMs: 1697206286533},
		{ID: "7f3a-14", Kind: KindChannel, Key: "a\"b\\c\n\u2028\xff", Type: TypeVacated, TimeMs: 1697206286540},
	}
	users := []Event{
		{ID: "7f3a-13", Kind: KindUser, Key: "42", Type: TypeOnline, TimeMs: 1697206286533, Info: json.RawMessage(`{"name":"Alice"}`)},
		{ID: "7f3a-15", Kind: KindUser, Key: "43", Type: TypeOffline, TimeMs: 1697206286534},
		{ID: "7f3a-16", Kind: KindUser, Key: "44", Type: TypeOnline, TimeMs: 1697206286535, Info: json.RawMessage{0xff, 0x00}},
	}
	for _, batch := range [][]Event{channels, users} {
		if err := s.Send(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	reqs := b.received()
	want := []string{
		`{"events":[{"id":"7f3a-12","channel":"chat:index","type":"occupied","time_ms":1697206286533},` +
			`{"id":"7f3a-14","channel":"a\"b\\c\n\u2028\ufffd","type":"vacated","time_ms":1697206286540}]}`,
		`{"events":[{"id":"7f3a-13","user":"42","type":"online","time_ms":1697206286533,"info":{"name":"Alice"}},` +
			`{"id":"7f3a-15","user":"43","type":"offline","time_ms":1697206286534},` +
			`{"id":"7f3a-16","user":"44","type":"online","time_ms":1697206286535,"b64info":"/wA="}]}`,
	}
	for i, r := range reqs {
		if string(r.body) != want[i] {
			t.Errorf("body %d:\n got %s\nwant %s", i, r.body, want[i])
		}
		if r.header.Get("Authorization") != "Bearer x" || r.header.Get("X-App") != "gyre" {
			t.Errorf("headers %v", r.header)
		}
		if err := VerifySignature(r.header.Get(SignatureHeader), r.body, secret, time.Now(), time.Minute); err != nil {
			t.Errorf("VerifySignature: %v", err)
		}
	}
	if got := reqs[0].events[1].Channel; got != "a\"b\\c\n\u2028\ufffd" {
		t.Errorf("channel decoded as %q", got)
	}

	// With binary encoding, JSON info goes base64 too.
	bin := b.newSender(SenderConfig{BinaryEncoding: true, Secret: secret})
	if err := bin.Send(ctx, users[:1]); err != nil {
		t.Fatal(err)
	}
	got := b.received()[2].events[0]
	if info, _ := base64.StdEncoding.DecodeString(got.B64Info); string(info) != `{"name":"Alice"}` || got.Info != nil {
		t.Errorf("binary encoding: info %s, b64info %q", got.Info, got.B64Info)
	}

	// Without a secret, no signature.
	plain := b.newSender(SenderConfig{})
	b.secret = nil
	if err := plain.Send(ctx, channels[:1]); err != nil {
		t.Fatal(err)
	}
	if h := b.received()[3].header.Get(SignatureHeader); h != "" {
		t.Errorf("unsigned request carries %q", h)
	}
}

func TestGRPCSender(t *testing.T) {
	b := newBackend(t, "grpc", nil)
	s := b.newSender(SenderConfig{Headers: map[string]string{"X-App": "gyre"}, GRPCCompression: true})
	ctx := context.Background()
	channels := []Event{
		{ID: "c1", Kind: KindChannel, Key: "chat:index", Type: TypeOccupied, TimeMs: 1},
		{ID: "c2", Kind: KindChannel, Key: "chat:index", Type: TypeVacated, TimeMs: 2},
	}
	users := []Event{
		{ID: "u1", Kind: KindUser, Key: "42", Type: TypeOnline, TimeMs: 3, Info: json.RawMessage{0xff, 0x00}},
		{ID: "u2", Kind: KindUser, Key: "42", Type: TypeOffline, TimeMs: 4},
	}
	for _, batch := range [][]Event{channels, users} {
		if err := s.Send(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	reqs := b.received()
	want := []request{
		{kind: KindChannel, events: []gotEvent{
			{ID: "c1", Channel: "chat:index", Type: "occupied", TimeMs: 1},
			{ID: "c2", Channel: "chat:index", Type: "vacated", TimeMs: 2},
		}},
		{kind: KindUser, events: []gotEvent{
			{ID: "u1", User: "42", Type: "online", TimeMs: 3, Info: json.RawMessage{0xff, 0x00}},
			{ID: "u2", User: "42", Type: "offline", TimeMs: 4},
		}},
	}
	for i, r := range reqs {
		if r.kind != want[i].kind || !slices.EqualFunc(r.events, want[i].events, func(a, b gotEvent) bool {
			return a.ID == b.ID && a.Channel == b.Channel && a.User == b.User && a.Type == b.Type &&
				a.TimeMs == b.TimeMs && string(a.Info) == string(b.Info)
		}) {
			t.Errorf("request %d: got %+v, want %+v", i, r, want[i])
		}
		if r.header.Get("x-app") != "gyre" {
			t.Errorf("metadata %v", r.header)
		}
	}
}

func TestSendRefusesMixedBatch(t *testing.T) {
	for _, proto := range []string{"http", "grpc"} {
		b := newBackend(t, proto, nil)
		s := b.newSender(SenderConfig{})
		mixed := []Event{{ID: "1", Kind: KindChannel, Key: "c"}, {ID: "2", Kind: KindUser, Key: "u"}}
		if err := s.Send(context.Background(), mixed); err == nil {
			t.Errorf("%s: a mixed batch was sent", proto)
		}
		if n := len(b.received()); n != 0 {
			t.Errorf("%s: %d requests", proto, n)
		}
	}
}

func TestNewSender(t *testing.T) {
	for _, c := range []struct {
		cfg SenderConfig
		ok  bool
	}{
		{SenderConfig{Endpoint: "http://localhost:1"}, true},
		{SenderConfig{Endpoint: "https://localhost:1"}, true},
		{SenderConfig{Endpoint: "grpc://localhost:1"}, false}, // no connection given
		{SenderConfig{Endpoint: "localhost:1"}, false},
		{SenderConfig{}, false},
	} {
		if _, err := NewSender(c.cfg); (err == nil) != c.ok {
			t.Errorf("NewSender(%q): %v", c.cfg.Endpoint, err)
		}
	}
}

func TestVerifySignature(t *testing.T) {
	secret := []byte("key")
	body := []byte(`{"events":[]}`)
	now := time.Unix(1_700_000_000, 0)
	good := sign(secret, now, body)
	cases := []struct {
		name   string
		header string
		body   []byte
		secret []byte
		at     time.Time
		want   error
	}{
		{"good", good, body, secret, now, nil},
		{"within tolerance", good, body, secret, now.Add(4 * time.Minute), nil},
		{"other keys ignored", good + ",v2=abc", body, secret, now, nil},
		{"one of several v1", "t=1700000000,v1=00," + strings.Split(good, ",")[1], body, secret, now, nil},
		{"body changed", good, []byte(`{"events":[{}]}`), secret, now, ErrSignatureInvalid},
		{"other secret", good, body, []byte("other"), now, ErrSignatureInvalid},
		{"t changed", strings.Replace(good, "t=1700000000", "t=1700000001", 1), body, secret, now, ErrSignatureInvalid},
		{"replayed", good, body, secret, now.Add(6 * time.Minute), ErrSignatureExpired},
		{"from the future", good, body, secret, now.Add(-6 * time.Minute), ErrSignatureExpired},
		{"empty", "", body, secret, now, ErrSignatureInvalid},
		{"no v1", "t=1700000000", body, secret, now, ErrSignatureInvalid},
		{"v1 not hex", "t=1700000000,v1=zz", body, secret, now, ErrSignatureInvalid},
		{"no t", strings.Split(good, ",")[1], body, secret, now, ErrSignatureInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := VerifySignature(c.header, c.body, c.secret, c.at, 5*time.Minute)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("VerifySignature(%q): %v, want %v", c.header, err, c.want)
			}
		})
	}
	// The header's form, and its check by the test backend's own code.
	if !strings.HasPrefix(good, "t=1700000000,v1=") || len(good) != len("t=1700000000,v1=")+64 {
		t.Errorf("header %q", good)
	}
	if err := checkSignature(sign(secret, time.Now(), body), body, secret); err != nil {
		t.Error(err)
	}
}

func TestFailReason(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("connection refused"), FailTransport},
		{context.DeadlineExceeded, FailTimeout},
		{&statusError{code: 500}, FailStatus},
		{errBadReply, FailBadReply},
		{&refusedError{code: 1}, FailRefused},
	} {
		if got := failReason(wrap(c.err)); got != c.want {
			t.Errorf("failReason(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

func wrap(err error) error { return errors.Join(errors.New("hooks: x"), err) }
