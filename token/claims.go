package token

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// ConnectToken is what a verified connection token grants.
type ConnectToken struct {
	// UserID is the user ("sub", or Config.UserIDClaim); empty means an
	// anonymous connection.
	UserID string
	// ExpireAt is when the connection expires, in Unix seconds: expire_at
	// when the token has it (0 there means never), else exp. 0: no expiry.
	ExpireAt int64
	// Info is the connection info: the raw JSON of info, or the decoded bytes
	// of b64info (which wins when both are present). Nil when absent.
	Info []byte
	// Channels are server-side subscriptions to make on connect.
	Channels []string
	// Subs are server-side subscriptions with per-channel options.
	Subs map[string]SubscribeOptions
	// Meta is raw JSON kept on the server side, never shown to clients.
	Meta json.RawMessage
}

// SubscribeToken is what a verified subscription token grants.
type SubscribeToken struct {
	// UserID must equal the connection's user; the caller compares.
	UserID string
	// Channel is the one channel the token allows; never empty.
	Channel string
	// ExpireAt is when the subscription expires, as in ConnectToken.
	ExpireAt int64
	// Info is the channel-scoped connection info (info or b64info).
	Info []byte
	// Data is sent to the client in the subscribe result (data or b64data).
	Data []byte
	// Override replaces channel options for this subscriber.
	Override Override
	// TagsFilter (claim "tf", a filter tree in the protocol's JSON shape)
	// and FilterExpr (claim "filter", a filter expression) restrict what
	// the subscriber receives, whatever filter the client asks for. Both
	// are passed on unparsed; the engine compiles them.
	TagsFilter json.RawMessage
	FilterExpr string
}

// SubscribeOptions are the per-channel options of the subs claim.
type SubscribeOptions struct {
	// Info is the channel-scoped connection info (info or b64info).
	Info []byte
	// Data goes to the client in the subscription's result (data or b64data).
	Data []byte
	// Override replaces channel options for this subscriber.
	Override Override
}

// Override replaces some channel namespace options for one subscriber. A nil
// field keeps the namespace's value.
type Override struct {
	Presence           *bool
	JoinLeave          *bool
	ForcePushJoinLeave *bool
	ForceRecovery      *bool
	ForcePositioning   *bool
}

// boolValue is the {"value": bool} wrapper the override claim uses.
type boolValue struct {
	Value bool `json:"value"`
}

type overrideClaim struct {
	Presence           *boolValue `json:"presence"`
	JoinLeave          *boolValue `json:"join_leave"`
	ForcePushJoinLeave *boolValue `json:"force_push_join_leave"`
	ForceRecovery      *boolValue `json:"force_recovery"`
	ForcePositioning   *boolValue `json:"force_positioning"`
}

type subOptionsClaim struct {
	Info     json.RawMessage `json:"info"`
	B64Info  string          `json:"b64info"`
	Data     json.RawMessage `json:"data"`
	B64Data  string          `json:"b64data"`
	Override *overrideClaim  `json:"override"`
}

type connectClaims struct {
	jwt.RegisteredClaims
	Info     json.RawMessage            `json:"info"`
	B64Info  string                     `json:"b64info"`
	Channels []string                   `json:"channels"`
	Subs     map[string]subOptionsClaim `json:"subs"`
	Meta     json.RawMessage            `json:"meta"`
	ExpireAt *int64                     `json:"expire_at"`
}

type subscribeClaims struct {
	jwt.RegisteredClaims
	subOptionsClaim
	Channel  string          `json:"channel"`
	ExpireAt *int64          `json:"expire_at"`
	TF       json.RawMessage `json:"tf"`
	Filter   string          `json:"filter"`
}

// VerifyConnectToken verifies a connection token and returns its grants.
// With skipExpiry an exp in the past is accepted; every other check still
// applies. Errors wrap ErrInvalidToken, ErrTokenExpired or
// ErrTokenNotValidYet.
func (v *Verifier) VerifyConnectToken(token string, skipExpiry bool) (ConnectToken, error) {
	var c connectClaims
	if err := v.verify(token, &c, &c.RegisteredClaims, skipExpiry); err != nil {
		return ConnectToken{}, err
	}
	user, err := v.userID(token, c.Subject)
	if err != nil {
		return ConnectToken{}, err
	}
	info, err := pickBytes(c.Info, c.B64Info, "b64info")
	if err != nil {
		return ConnectToken{}, err
	}
	ct := ConnectToken{
		UserID:   user,
		ExpireAt: expireAt(c.ExpireAt, c.ExpiresAt),
		Info:     info,
		Channels: c.Channels,
		Meta:     rawJSON(c.Meta),
	}
	if len(c.Subs) > 0 {
		ct.Subs = make(map[string]SubscribeOptions, len(c.Subs))
		for ch, o := range c.Subs {
			opts, err := o.options()
			if err != nil {
				return ConnectToken{}, fmt.Errorf("%w (subs %q)", err, ch)
			}
			ct.Subs[ch] = opts
		}
	}
	return ct, nil
}

// VerifySubscribeToken verifies a subscription token and returns its grants.
// The channel claim is required. Comparing UserID and Channel with the
// connection and the requested channel is the caller's job. Errors wrap
// the same sentinels as VerifyConnectToken's.
func (v *Verifier) VerifySubscribeToken(token string, skipExpiry bool) (SubscribeToken, error) {
	var c subscribeClaims
	if err := v.verify(token, &c, &c.RegisteredClaims, skipExpiry); err != nil {
		return SubscribeToken{}, err
	}
	if c.Channel == "" {
		return SubscribeToken{}, invalid("no channel claim")
	}
	user, err := v.userID(token, c.Subject)
	if err != nil {
		return SubscribeToken{}, err
	}
	opts, err := c.options()
	if err != nil {
		return SubscribeToken{}, err
	}
	return SubscribeToken{
		UserID:     user,
		Channel:    c.Channel,
		ExpireAt:   expireAt(c.ExpireAt, c.ExpiresAt),
		Info:       opts.Info,
		Data:       opts.Data,
		Override:   opts.Override,
		TagsFilter: rawJSON(c.TF),
		FilterExpr: c.Filter,
	}, nil
}

// userID returns sub, or the configured claim. The payload is decoded a
// second time for a custom claim; that only happens after the signature
// holds, and only for configurations that ask for it.
func (v *Verifier) userID(token, sub string) (string, error) {
	if v.userIDClaim == "" {
		return sub, nil
	}
	_, rest, _ := strings.Cut(token, ".")
	payload, _, _ := strings.Cut(rest, ".")
	raw, err := v.parser.DecodeSegment(payload)
	if err != nil {
		return "", invalid("decode payload: %v", err)
	}
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(raw, &claims); err != nil {
		return "", invalid("decode payload: %v", err)
	}
	val, ok := claims[v.userIDClaim]
	if !ok || string(val) == "null" {
		return "", nil
	}
	var user string
	if err := json.Unmarshal(val, &user); err != nil {
		return "", invalid("claim %q is not a string", v.userIDClaim)
	}
	return user, nil
}

func (o subOptionsClaim) options() (SubscribeOptions, error) {
	info, err := pickBytes(o.Info, o.B64Info, "b64info")
	if err != nil {
		return SubscribeOptions{}, err
	}
	data, err := pickBytes(o.Data, o.B64Data, "b64data")
	if err != nil {
		return SubscribeOptions{}, err
	}
	return SubscribeOptions{Info: info, Data: data, Override: o.Override.override()}, nil
}

func (o *overrideClaim) override() Override {
	if o == nil {
		return Override{}
	}
	return Override{
		Presence:           o.Presence.ptr(),
		JoinLeave:          o.JoinLeave.ptr(),
		ForcePushJoinLeave: o.ForcePushJoinLeave.ptr(),
		ForceRecovery:      o.ForceRecovery.ptr(),
		ForcePositioning:   o.ForcePositioning.ptr(),
	}
}

func (b *boolValue) ptr() *bool {
	if b == nil {
		return nil
	}
	v := b.Value
	return &v
}

// pickBytes prefers the base64 form, which exists for binary payloads that
// JSON cannot carry, over the raw JSON form.
func pickBytes(raw json.RawMessage, b64, name string) ([]byte, error) {
	if b64 == "" {
		return rawJSON(raw), nil
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, invalid("%s: %v", name, err)
	}
	return b, nil
}

// rawJSON maps an absent or null value to nil so callers test len == 0.
func rawJSON(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}

// expireAt applies the rule: expire_at when present (0 or less: never), else
// exp, else never.
func expireAt(at *int64, exp *jwt.NumericDate) int64 {
	switch {
	case at != nil:
		return max(*at, 0)
	case exp != nil:
		return exp.Unix()
	default:
		return 0
	}
}
