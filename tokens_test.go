package gyre_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// The tests of this file go through the table of token faults in
// docs/tokens.md, row by row, for every way a token reaches the server:
// connect, refresh, subscribe, sub_refresh and the subs of a connect
// request. The node checks audience and issuer so that those rows have
// something to fail.

const (
	tokenAudience = "gyre-tests"
	tokenIssuer   = "gyre-auth"
)

func tokenTestConfig() gyre.Config {
	cfg := chatConfig()
	cfg.Token = token.Config{HMACSecretKey: testSecret, Audience: tokenAudience, Issuer: tokenIssuer}
	return cfg
}

// goodClaims are the claims of a token the test node accepts: for a
// connection when channel is empty, else for a subscription to channel.
func goodClaims(user, channel string) map[string]any {
	c := map[string]any{
		"sub": user, "aud": tokenAudience, "iss": tokenIssuer,
		"exp": time.Now().Add(time.Hour).Unix(),
	}
	if channel != "" {
		c["channel"] = channel
	}
	return c
}

// with returns a copy of claims with the given claim set, or removed when
// value is nil.
func with(claims map[string]any, claim string, value any) map[string]any {
	out := make(map[string]any, len(claims)+1)
	for k, v := range claims {
		out[k] = v
	}
	if value == nil {
		delete(out, claim)
	} else {
		out[claim] = value
	}
	return out
}

func signWith(t testing.TB, secret string, claims map[string]any) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(secret), claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// signJWT signs with golang-jwt, for the algorithms SignHMAC does not do.
func signJWT(t testing.TB, method jwt.SigningMethod, key any, claims map[string]any) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, jwt.MapClaims(claims)).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ecKey signs ES256 tokens, an algorithm the test node holds no key for.
var ecKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

// tokenFault makes a token that goes wrong in one way from the claims of a
// good one.
type tokenFault struct {
	name string
	make func(t testing.TB, claims map[string]any) string
}

// invalidFaults are the tokens that are wrong whenever they are used: the
// node refuses them for good.
var invalidFaults = []tokenFault{
	{"malformed", func(testing.TB, map[string]any) string { return "not-a-jwt" }},
	{"three junk segments", func(testing.TB, map[string]any) string { return "a.b.c" }},
	{"bad signature", func(t testing.TB, c map[string]any) string { return signWith(t, "another-secret", c) }},
	{"alg none", func(t testing.TB, c map[string]any) string {
		return signJWT(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, c)
	}},
	{"algorithm without a key", func(t testing.TB, c map[string]any) string {
		return signJWT(t, jwt.SigningMethodES256, ecKey(), c)
	}},
	{"wrong audience", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "aud", "someone-else"))
	}},
	{"no audience", func(t testing.TB, c map[string]any) string { return signWith(t, testSecret, with(c, "aud", nil)) }},
	{"wrong issuer", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "iss", "someone-else"))
	}},
	{"bad b64info claim", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "b64info", "%%%"))
	}},
}

// subscriptionInvalidFaults add the claims only a subscription token has.
var subscriptionInvalidFaults = slices.Concat(invalidFaults, []tokenFault{
	{"no channel claim", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "channel", nil))
	}},
	{"bad b64data claim", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "b64data", "%%%"))
	}},
})

// timeFaults are the tokens that are good but for the time: the client is
// asked for another one (error 109).
var timeFaults = []tokenFault{
	{"expired", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "exp", time.Now().Add(-time.Minute).Unix()))
	}},
	{"nbf in the future", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "nbf", time.Now().Add(time.Hour).Unix()))
	}},
}

// channelSeq gives each row its own channel, so rows on one node never
// meet.
var channelSeq atomic.Int64

func nextChannel(prefix string) string {
	return prefix + strconv.FormatInt(channelSeq.Add(1), 10)
}

// connectGood connects c as user with a good token.
func connectGood(t *testing.T, c *testClient, user string) {
	t.Helper()
	c.connect(signWith(t, testSecret, goodClaims(user, "")))
}

// wantClose sends cmd and wants the connection closed with code instead of
// a reply.
func wantClose(t *testing.T, c *testClient, cmd *protocol.Command, code uint16) {
	t.Helper()
	r, closed := c.TryCall(cmd)
	if closed == nil {
		t.Fatalf("reply %+v, want close %d", r, code)
	}
	if uint16(closed.Code) != code {
		t.Fatalf("closed %d (%s), want %d", closed.Code, closed.Reason, code)
	}
}

// wantError sends cmd and wants an error reply with code.
func wantError(t *testing.T, c *testClient, cmd *protocol.Command, code uint32) {
	t.Helper()
	r, closed := c.TryCall(cmd)
	if closed != nil {
		t.Fatalf("closed %d (%s), want error %d", closed.Code, closed.Reason, code)
	}
	if r.Error == nil || r.Error.Code != code {
		t.Fatalf("reply %+v, want error %d", r, code)
	}
}

// subscribeWithToken subscribes c to a private channel with a good token
// and fails the test otherwise: after a refusal that keeps the connection,
// it shows that the connection still works.
func subscribeWithToken(t *testing.T, c *testClient, user string) string {
	t.Helper()
	ch := nextChannel("private:ok-")
	r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Token: signWith(t, testSecret, goodClaims(user, ch))})
	if r.Error != nil {
		t.Fatalf("subscribe to %s with a good token: error %d %s", ch, r.Error.Code, r.Error.Message)
	}
	return ch
}

func TestConnectTokenFaults(t *testing.T) {
	_, url := newTestNode(t, tokenTestConfig())
	connect := func(tok string) *protocol.Command {
		return &protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}}
	}
	faults := slices.Concat(invalidFaults, []tokenFault{{"bad subs claim", func(t testing.TB, c map[string]any) string {
		return signWith(t, testSecret, with(c, "subs", map[string]any{"news": map[string]any{"b64data": "%%%"}}))
	}}})
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			c := dial(t, url, protocol.TypeJSON)
			wantClose(t, c, connect(f.make(t, goodClaims("42", ""))), 3500)
		})
	}
	for _, f := range timeFaults {
		t.Run(f.name, func(t *testing.T) {
			c := dial(t, url, protocol.TypeJSON)
			wantError(t, c, connect(f.make(t, goodClaims("42", ""))), 109)
			// The connection waits for a connect with a fresh token.
			connectGood(t, c, "42")
		})
	}
}

func TestConnectTokenRefusedByConfig(t *testing.T) {
	t.Run("anonymous token disallowed", func(t *testing.T) {
		cfg := tokenTestConfig()
		cfg.DisallowAnonymousConnectionTokens = true
		_, url := newTestNode(t, cfg)
		c := dial(t, url, protocol.TypeJSON)
		tok := signWith(t, testSecret, goodClaims("", ""))
		wantClose(t, c, &protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}}, 3507)
	})
	t.Run("no keys configured", func(t *testing.T) {
		cfg := chatConfig()
		cfg.AllowAnonymousConnectWithoutToken = true
		_, url := newTestNodeWith(t, cfg, func(n *gyre.Node) {
			if err := n.SetTokenConfig(token.Config{}, gyre.SubscriptionTokenConfig{}); err != nil {
				t.Fatal(err)
			}
		})
		c := dial(t, url, protocol.TypeJSON)
		wantClose(t, c, &protocol.Command{Connect: &protocol.ConnectRequest{Token: connToken(t, "42", 0, nil)}}, 3500)
		// An anonymous connection that refreshes with a token.
		c = dial(t, url, protocol.TypeJSON)
		c.connect("")
		wantClose(t, c, &protocol.Command{Refresh: &protocol.RefreshRequest{Token: connToken(t, "", 0, nil)}}, 3500)
	})
}

func TestSubscribeTokenFaults(t *testing.T) {
	configs := []struct {
		name string
		cfg  func() gyre.Config
	}{
		{"client.token keys", tokenTestConfig},
		// client.subscription_token: its own keys and checks, here the
		// same ones, so that every row applies unchanged.
		{"client.subscription_token keys", func() gyre.Config {
			cfg := tokenTestConfig()
			cfg.Token = token.Config{HMACSecretKey: testSecret}
			cfg.SubscriptionToken = gyre.SubscriptionTokenConfig{Enabled: true, Config: token.Config{
				HMACSecretKey: testSecret, Audience: tokenAudience, Issuer: tokenIssuer,
			}}
			return cfg
		}},
	}
	for _, conf := range configs {
		t.Run(conf.name, func(t *testing.T) {
			_, url := newTestNode(t, conf.cfg())
			subscribe := func(ch, tok string) *protocol.Command {
				return &protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: ch, Token: tok}}
			}
			// Filters are read on subscribe only; sub_refresh keeps the
			// subscription's.
			refused := slices.Concat(subscriptionInvalidFaults, []tokenFault{
				{"bad filter claim", func(t testing.TB, c map[string]any) string {
					return signWith(t, testSecret, with(c, "filter", "region ==="))
				}},
				{"bad tf claim", func(t testing.TB, c map[string]any) string {
					return signWith(t, testSecret, with(c, "tf", map[string]any{"op": "xor"}))
				}},
			})
			for _, f := range refused {
				t.Run(f.name, func(t *testing.T) {
					c := dial(t, url, protocol.TypeJSON)
					connectGood(t, c, "42")
					ch := nextChannel("private:room-")
					wantError(t, c, subscribe(ch, f.make(t, goodClaims("42", ch))), 103)
					subscribeWithToken(t, c, "42")
				})
			}
			for _, f := range timeFaults {
				t.Run(f.name, func(t *testing.T) {
					c := dial(t, url, protocol.TypeJSON)
					connectGood(t, c, "42")
					ch := nextChannel("private:room-")
					wantError(t, c, subscribe(ch, f.make(t, goodClaims("42", ch))), 109)
					subscribeWithToken(t, c, "42")
				})
			}
			mismatches := []struct {
				name     string
				connUser string
				tokUser  string
				other    bool // token for another channel
			}{
				{"another channel", "42", "42", true},
				{"another user", "42", "43", false},
				{"a user's token on an anonymous connection", "", "42", false},
				{"an anonymous token on a user's connection", "42", "", false},
			}
			for _, m := range mismatches {
				t.Run(m.name, func(t *testing.T) {
					c := dial(t, url, protocol.TypeJSON)
					connectGood(t, c, m.connUser)
					ch := nextChannel("private:room-")
					tokCh := ch
					if m.other {
						tokCh = ch + "-other"
					}
					wantClose(t, c, subscribe(ch, signWith(t, testSecret, goodClaims(m.tokUser, tokCh))), 3500)
				})
			}
		})
	}
	t.Run("no keys for subscription tokens", func(t *testing.T) {
		cfg := tokenTestConfig()
		cfg.SubscriptionToken = gyre.SubscriptionTokenConfig{Enabled: true}
		_, url := newTestNode(t, cfg)
		c := dial(t, url, protocol.TypeJSON)
		connectGood(t, c, "42")
		ch := nextChannel("private:room-")
		tok := signWith(t, testSecret, goodClaims("42", ch))
		wantError(t, c, &protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: ch, Token: tok}}, 103)
		c.MustSubscribe("news")
		tok = signWith(t, testSecret, goodClaims("42", "news"))
		wantError(t, c, &protocol.Command{SubRefresh: &protocol.SubRefreshRequest{Channel: "news", Token: tok}}, 103)
		c.MustSubscribe("chat:after")
	})
}

func TestSubRefreshTokenFaults(t *testing.T) {
	_, url := newTestNode(t, tokenTestConfig())
	// setup connects, subscribes to a private channel with a good token
	// and returns the channel.
	setup := func(t *testing.T) (*testClient, string) {
		c := dial(t, url, protocol.TypeJSON)
		connectGood(t, c, "42")
		return c, subscribeWithToken(t, c, "42")
	}
	subRefresh := func(ch, tok string) *protocol.Command {
		return &protocol.Command{SubRefresh: &protocol.SubRefreshRequest{Channel: ch, Token: tok}}
	}
	// stillGood refreshes ch with a good token: the refusal before it
	// left the connection and the subscription in place.
	stillGood := func(t *testing.T, c *testClient, ch string) {
		t.Helper()
		r := c.Call(subRefresh(ch, signWith(t, testSecret, goodClaims("42", ch))))
		if r.Error != nil || r.SubRefresh == nil || !r.SubRefresh.Expires {
			t.Fatalf("sub_refresh with a good token: %+v", r)
		}
	}
	for _, f := range subscriptionInvalidFaults {
		t.Run(f.name, func(t *testing.T) {
			c, ch := setup(t)
			wantError(t, c, subRefresh(ch, f.make(t, goodClaims("42", ch))), 103)
			stillGood(t, c, ch)
		})
	}
	for _, f := range timeFaults {
		t.Run(f.name, func(t *testing.T) {
			c, ch := setup(t)
			wantError(t, c, subRefresh(ch, f.make(t, goodClaims("42", ch))), 109)
			stillGood(t, c, ch)
		})
	}
	t.Run("empty token", func(t *testing.T) {
		c, ch := setup(t)
		wantError(t, c, subRefresh(ch, ""), 107)
		stillGood(t, c, ch)
	})
	t.Run("another channel", func(t *testing.T) {
		c, ch := setup(t)
		other := subscribeWithToken(t, c, "42")
		wantClose(t, c, subRefresh(ch, signWith(t, testSecret, goodClaims("42", other))), 3500)
	})
	t.Run("another user", func(t *testing.T) {
		c, ch := setup(t)
		wantClose(t, c, subRefresh(ch, signWith(t, testSecret, goodClaims("43", ch))), 3500)
	})
}

func TestRefreshTokenFaults(t *testing.T) {
	_, url := newTestNode(t, tokenTestConfig())
	refresh := func(tok string) *protocol.Command {
		return &protocol.Command{Refresh: &protocol.RefreshRequest{Token: tok}}
	}
	stillGood := func(t *testing.T, c *testClient) {
		t.Helper()
		r := c.Call(refresh(signWith(t, testSecret, goodClaims("42", ""))))
		if r.Error != nil || r.Refresh == nil || !r.Refresh.Expires {
			t.Fatalf("refresh with a good token: %+v", r)
		}
	}
	for _, f := range invalidFaults {
		t.Run(f.name, func(t *testing.T) {
			c := dial(t, url, protocol.TypeJSON)
			connectGood(t, c, "42")
			wantClose(t, c, refresh(f.make(t, goodClaims("42", ""))), 3500)
		})
	}
	// The SDKs end a connection for good on a refresh error: a token that
	// is good but for the time closes it with 3005 instead, after which
	// the client reconnects and, told 109 by connect, fetches a fresh one.
	for _, f := range timeFaults {
		t.Run(f.name, func(t *testing.T) {
			c := dial(t, url, protocol.TypeJSON)
			connectGood(t, c, "42")
			wantClose(t, c, refresh(f.make(t, goodClaims("42", ""))), 3005)
		})
	}
	t.Run("another user", func(t *testing.T) {
		c := dial(t, url, protocol.TypeJSON)
		connectGood(t, c, "42")
		wantClose(t, c, refresh(signWith(t, testSecret, goodClaims("43", ""))), 3500)
	})
	t.Run("empty token", func(t *testing.T) {
		c := dial(t, url, protocol.TypeJSON)
		connectGood(t, c, "42")
		wantError(t, c, refresh(""), 107)
		stillGood(t, c)
	})
}

// TestConnectSubsTokens: the subs of a connect request only say where the
// client stands in the server-side subscriptions; a token in them is never
// verified and grants nothing, whether it is good or not. The connection
// token alone decides the server-side subscriptions.
func TestConnectSubsTokens(t *testing.T) {
	_, url := newTestNode(t, tokenTestConfig())
	c := dial(t, url, protocol.TypeJSON)
	granted := nextChannel("chat:srv-")
	private := nextChannel("private:room-")
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{
		Token: signWith(t, testSecret, with(goodClaims("42", ""), "channels", []string{granted})),
		Subs: map[string]*protocol.SubscribeRequest{
			granted: {Token: "not-a-jwt"},
			private: {Token: signWith(t, testSecret, goodClaims("42", private))},
		},
	}})
	if r.Error != nil || r.Connect == nil {
		t.Fatalf("connect: %+v", r)
	}
	if _, ok := r.Connect.Subs[granted]; !ok {
		t.Errorf("connect subs %v, want %s", r.Connect.Subs, granted)
	}
	if _, ok := r.Connect.Subs[private]; ok {
		t.Errorf("connect subs %v: %s came from a token in the request", r.Connect.Subs, private)
	}
	subscribeWithToken(t, c, "42")
}

// TestUniConnectTokenFaults: a unidirectional client reads no error
// replies, so a refused connect is a disconnect push: the connect table
// with 109 turned into 3005, which the client retries.
func TestUniConnectTokenFaults(t *testing.T) {
	cfg := tokenTestConfig()
	cfg.DisallowAnonymousConnectionTokens = true
	s := newTransportServer(t, cfg, transportOptions{})
	type row struct {
		name string
		tok  string
		code uint32
	}
	var rows []row
	for _, f := range invalidFaults {
		rows = append(rows, row{f.name, f.make(t, goodClaims("42", "")), 3500})
	}
	for _, f := range timeFaults {
		rows = append(rows, row{f.name, f.make(t, goodClaims("42", "")), 3005})
	}
	rows = append(rows, row{"anonymous token disallowed", signWith(t, testSecret, goodClaims("", "")), 3507})
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			u := openUni(t, s.url, "uni_http_stream", `{"token":"`+r.tok+`"}`, true)
			if p, _ := u.next(); p.Disconnect == nil || p.Disconnect.Code != r.code {
				t.Errorf("push %v, want disconnect %d", p, r.code)
			}
		})
	}
}

// TestConnectTokenSubsOptions: each channel of the subs claim keeps its
// own info, data and overrides: data comes back in the connect result,
// info is the subscriber's channel info in presence, and override turns
// presence off in a namespace that has it.
func TestConnectTokenSubsOptions(t *testing.T) {
	n, url := newTestNode(t, tokenTestConfig())
	seated := nextChannel("chat:seated-")
	hidden := nextChannel("chat:hidden-")
	c := dial(t, url, protocol.TypeJSON)
	res := c.connect(signWith(t, testSecret, with(goodClaims("42", ""), "subs", map[string]any{
		seated: map[string]any{"info": map[string]any{"seat": 7}, "data": map[string]any{"hello": 1}},
		hidden: map[string]any{"override": map[string]any{"presence": map[string]any{"value": false}}},
	})))
	if sr := res.Subs[seated]; sr == nil || string(sr.Data) != `{"hello":1}` {
		t.Fatalf("connect subs[%s] = %+v, want data {\"hello\":1}", seated, sr)
	}
	if sr := res.Subs[hidden]; sr == nil {
		t.Fatalf("connect subs %v, want %s", res.Subs, hidden)
	}
	p, err := n.Presence(seated)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 {
		t.Fatalf("presence of %s: %v, want the one subscriber", seated, p)
	}
	for _, ci := range p {
		if string(ci.ChanInfo) != `{"seat":7}` {
			t.Errorf("chan info %q, want {\"seat\":7}", ci.ChanInfo)
		}
	}
	if p, err := n.Presence(hidden); err != nil || len(p) != 0 {
		t.Errorf("presence of %s: %v %v, want none (override off)", hidden, p, err)
	}
}

// TestConnectTokenSubsBinaryData: b64data reaches a protobuf client as
// the bytes it encodes.
func TestConnectTokenSubsBinaryData(t *testing.T) {
	_, url := newTestNode(t, tokenTestConfig())
	ch := nextChannel("srv-")
	c := dial(t, url, protocol.TypeProtobuf)
	res := c.connect(signWith(t, testSecret, with(goodClaims("42", ""), "subs", map[string]any{
		ch: map[string]any{"b64data": "AAEC"},
	})))
	if sr := res.Subs[ch]; sr == nil || string(sr.Data) != "\x00\x01\x02" {
		t.Fatalf("connect subs[%s] = %+v, want data 00 01 02", ch, sr)
	}
}

// TestSubscribeTokenDataAndOverride: a subscription token's data is in
// the subscribe result, its info in presence, and its override applies.
func TestSubscribeTokenDataAndOverride(t *testing.T) {
	n, url := newTestNode(t, tokenTestConfig())
	c := dial(t, url, protocol.TypeJSON)
	connectGood(t, c, "42")
	ch := nextChannel("chat:d-")
	hidden := nextChannel("chat:h-")
	tok := signWith(t, testSecret, with(with(goodClaims("42", ch),
		"data", map[string]any{"welcome": true}),
		"info", map[string]any{"role": "mod"}))
	r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Token: tok})
	if r.Error != nil {
		t.Fatalf("subscribe: %+v", r.Error)
	}
	if string(r.Subscribe.Data) != `{"welcome":true}` {
		t.Errorf("subscribe data %q, want {\"welcome\":true}", r.Subscribe.Data)
	}
	p, err := n.Presence(ch)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 {
		t.Fatalf("presence %v, want the subscriber", p)
	}
	for _, ci := range p {
		if string(ci.ChanInfo) != `{"role":"mod"}` {
			t.Errorf("chan info %q", ci.ChanInfo)
		}
	}
	tok = signWith(t, testSecret, with(goodClaims("42", hidden),
		"override", map[string]any{"presence": map[string]any{"value": false}}))
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: hidden, Token: tok}); r.Error != nil {
		t.Fatalf("subscribe: %+v", r.Error)
	}
	if p, err := n.Presence(hidden); err != nil || len(p) != 0 {
		t.Errorf("presence of %s: %v %v, want none (override off)", hidden, p, err)
	}
}
