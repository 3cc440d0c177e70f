package token_test

import (
	"encoding/base64"
	"errors"
	"reflect"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

func ptr(b bool) *bool { return &b }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestConnectClaims(t *testing.T) {
	tests := []struct {
		name   string
		claims jwt.MapClaims
		want   token.ConnectToken
	}{
		{"anonymous", jwt.MapClaims{}, token.ConnectToken{}},
		{"info", jwt.MapClaims{"sub": "7", "info": map[string]any{"name": "Ann"}},
			token.ConnectToken{UserID: "7", Info: []byte(`{"name":"Ann"}`)}},
		{"b64info", jwt.MapClaims{"b64info": b64("\x00\x01binary")},
			token.ConnectToken{Info: []byte("\x00\x01binary")}},
		{"b64info wins over info", jwt.MapClaims{"info": "x", "b64info": b64("y")},
			token.ConnectToken{Info: []byte("y")}},
		{"null info", jwt.MapClaims{"info": nil}, token.ConnectToken{}},
		{"channels", jwt.MapClaims{"channels": []string{"news", "chat:1"}},
			token.ConnectToken{Channels: []string{"news", "chat:1"}}},
		{"meta", jwt.MapClaims{"meta": map[string]any{"plan": "pro"}},
			token.ConnectToken{Meta: []byte(`{"plan":"pro"}`)}},
		{"subs", jwt.MapClaims{"subs": map[string]any{
			"a": map[string]any{"info": map[string]any{"k": 1}, "data": []int{1}},
			"b": map[string]any{"b64info": b64("i"), "b64data": b64("d")},
			"c": map[string]any{"override": map[string]any{
				"presence":              map[string]any{"value": true},
				"join_leave":            map[string]any{"value": false},
				"force_push_join_leave": map[string]any{"value": true},
				"force_recovery":        map[string]any{"value": false},
				"force_positioning":     map[string]any{"value": true},
			}},
			"d": map[string]any{},
		}}, token.ConnectToken{Subs: map[string]token.SubscribeOptions{
			"a": {Info: []byte(`{"k":1}`), Data: []byte(`[1]`)},
			"b": {Info: []byte("i"), Data: []byte("d")},
			"c": {Override: token.Override{
				Presence: ptr(true), JoinLeave: ptr(false), ForcePushJoinLeave: ptr(true),
				ForceRecovery: ptr(false), ForcePositioning: ptr(true),
			}},
			"d": {},
		}}},
	}
	v := hmacVerifier(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.VerifyConnectToken(hs256(t, tt.claims), false)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSubscribeToken(t *testing.T) {
	tests := []struct {
		name    string
		claims  jwt.MapClaims
		want    token.SubscribeToken
		wantErr error
	}{
		{"minimal", jwt.MapClaims{"sub": "42", "channel": "$gossips"},
			token.SubscribeToken{UserID: "42", Channel: "$gossips"}, nil},
		{"anonymous", jwt.MapClaims{"channel": "c"}, token.SubscribeToken{Channel: "c"}, nil},
		{"everything", jwt.MapClaims{
			"sub": "42", "channel": "c", "exp": 1 << 40, "expire_at": 0,
			"info": map[string]any{"role": "mod"}, "data": map[string]any{"hello": 1},
			"override": map[string]any{"presence": map[string]any{"value": false}},
		}, token.SubscribeToken{
			UserID: "42", Channel: "c", Info: []byte(`{"role":"mod"}`), Data: []byte(`{"hello":1}`),
			Override: token.Override{Presence: ptr(false)},
		}, nil},
		{"base64", jwt.MapClaims{"channel": "c", "b64info": b64("i"), "b64data": b64("d"), "exp": 1 << 40},
			token.SubscribeToken{Channel: "c", Info: []byte("i"), Data: []byte("d"), ExpireAt: 1 << 40}, nil},
		{"no channel", jwt.MapClaims{"sub": "42"}, token.SubscribeToken{}, token.ErrInvalidToken},
		{"bad b64data", jwt.MapClaims{"channel": "c", "b64data": "!"}, token.SubscribeToken{}, token.ErrInvalidToken},
		{"expired", jwt.MapClaims{"channel": "c", "exp": hourAgo()}, token.SubscribeToken{}, token.ErrTokenExpired},
		{"not valid yet", jwt.MapClaims{"channel": "c", "nbf": inHour()}, token.SubscribeToken{}, token.ErrTokenNotValidYet},
	}
	v := hmacVerifier(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.VerifySubscribeToken(hs256(t, tt.claims), false)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestAudienceIssuer(t *testing.T) {
	tests := []struct {
		name   string
		cfg    token.Config
		claims jwt.MapClaims
		ok     bool
	}{
		{"no check", token.Config{}, jwt.MapClaims{"aud": "x", "iss": "y"}, true},
		{"aud exact", token.Config{Audience: "gyre"}, jwt.MapClaims{"aud": "gyre"}, true},
		{"aud exact in list", token.Config{Audience: "gyre"}, jwt.MapClaims{"aud": []string{"a", "gyre"}}, true},
		{"aud exact mismatch", token.Config{Audience: "gyre"}, jwt.MapClaims{"aud": "gyre2"}, false},
		{"aud missing", token.Config{Audience: "gyre"}, jwt.MapClaims{}, false},
		{"aud regex", token.Config{AudienceRegex: `^gyre-\d+$`}, jwt.MapClaims{"aud": "gyre-12"}, true},
		{"aud regex in list", token.Config{AudienceRegex: `^gyre-\d+$`}, jwt.MapClaims{"aud": []string{"x", "gyre-1"}}, true},
		{"aud regex mismatch", token.Config{AudienceRegex: `^gyre-\d+$`}, jwt.MapClaims{"aud": "gyre-x"}, false},
		{"iss exact", token.Config{Issuer: "app"}, jwt.MapClaims{"iss": "app"}, true},
		{"iss exact mismatch", token.Config{Issuer: "app"}, jwt.MapClaims{"iss": "App"}, false},
		{"iss missing", token.Config{Issuer: "app"}, jwt.MapClaims{}, false},
		{"iss regex", token.Config{IssuerRegex: `^https://idp/realms/[a-z]+$`}, jwt.MapClaims{"iss": "https://idp/realms/acme"}, true},
		{"iss regex mismatch", token.Config{IssuerRegex: `^https://idp/realms/[a-z]+$`}, jwt.MapClaims{"iss": "https://evil/realms/acme"}, false},
		{"both", token.Config{Audience: "gyre", Issuer: "app"}, jwt.MapClaims{"aud": "gyre", "iss": "app"}, true},
		{"both, iss wrong", token.Config{Audience: "gyre", Issuer: "app"}, jwt.MapClaims{"aud": "gyre", "iss": "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.HMACSecretKey = testSecret
			v := newVerifier(t, tt.cfg)
			tok := hs256(t, tt.claims)
			_, err := v.VerifyConnectToken(tok, false)
			if tt.ok != (err == nil) {
				t.Fatalf("connect: err = %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok && !errors.Is(err, token.ErrInvalidToken) {
				t.Fatalf("connect: err = %v, want ErrInvalidToken", err)
			}
			tt.claims["channel"] = "c"
			_, err = v.VerifySubscribeToken(hs256(t, tt.claims), false)
			if tt.ok != (err == nil) {
				t.Fatalf("subscribe: err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestUserIDClaim(t *testing.T) {
	tests := []struct {
		name    string
		claims  jwt.MapClaims
		want    string
		wantErr bool
	}{
		{"custom claim", jwt.MapClaims{"sub": "ignored", "user_id": "99"}, "99", false},
		{"missing is anonymous", jwt.MapClaims{"sub": "ignored"}, "", false},
		{"null is anonymous", jwt.MapClaims{"user_id": nil}, "", false},
		{"not a string", jwt.MapClaims{"user_id": 99}, "", true},
	}
	v := newVerifier(t, token.Config{HMACSecretKey: testSecret, UserIDClaim: "user_id"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, err := v.VerifyConnectToken(hs256(t, tt.claims), false)
			if tt.wantErr {
				if !errors.Is(err, token.ErrInvalidToken) {
					t.Fatalf("connect: err = %v, want ErrInvalidToken", err)
				}
				return
			}
			if err != nil || ct.UserID != tt.want {
				t.Fatalf("connect: UserID = %q, err = %v; want %q", ct.UserID, err, tt.want)
			}
			tt.claims["channel"] = "c"
			st, err := v.VerifySubscribeToken(hs256(t, tt.claims), false)
			if err != nil || st.UserID != tt.want {
				t.Fatalf("subscribe: UserID = %q, err = %v; want %q", st.UserID, err, tt.want)
			}
		})
	}
}
