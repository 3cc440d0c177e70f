package token_test

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

// TestFastHMACMatchesGolangJWT verifies a corpus of tokens with the HMAC
// fast path and with golang-jwt alone: both must accept the same tokens,
// with the same grants, and refuse the others with the same kind of
// error.
func TestFastHMACMatchesGolangJWT(t *testing.T) {
	enc := base64.RawURLEncoding
	claims := []jwt.MapClaims{
		{"sub": "42"},
		{"sub": "42", "exp": inHour(), "iat": 1700000000, "info": map[string]any{"a": 1}, "channels": []string{"x", "y"}},
		{"sub": "7", "exp": hourAgo()},
		{"sub": "7", "nbf": inHour()},
		{"b64info": "AAE=", "expire_at": 0, "meta": []int{1}},
		{"subs": map[string]any{"c": map[string]any{"b64data": "AAE=", "override": map[string]any{"presence": map[string]any{"value": true}}}}},
		{"sub": 42},                     // not a string
		{"exp": "soon"},                 // not a number
		{"channel": "news", "sub": "1"}, // a subscription token
	}
	var tokens []string
	for _, c := range claims {
		for _, m := range []jwt.SigningMethod{jwt.SigningMethodHS256, jwt.SigningMethodHS384, jwt.SigningMethodHS512} {
			tokens = append(tokens,
				sign(t, m, []byte(testSecret), c, nil),
				sign(t, m, []byte(testSecret), c, map[string]any{"kid": "k1"}),        // a header to decode
				sign(t, m, []byte("another secret"), c, nil),                          // wrong secret
				sign(t, m, []byte(testSecret), c, map[string]any{"typ": "something"}), // other typ
			)
		}
	}
	good := hs256(t, jwt.MapClaims{"sub": "42"})
	parts := strings.Split(good, ".")
	sig := parts[2]
	tokens = append(tokens,
		parts[0]+"."+parts[1], // two segments
		good+".x",             // four segments
		parts[0]+"."+parts[1]+"."+sig[:len(sig)-2], // short signature
		parts[0]+"."+parts[1]+"."+sig+"A",          // long signature
		parts[0]+"."+parts[1]+"."+sig+"=",          // padded signature
		parts[0]+"."+parts[1]+"."+strings.ToUpper(sig),
		parts[0]+"."+enc.EncodeToString([]byte(`{"sub":"43"}`))+"."+sig, // tampered payload
		parts[0]+".!!!."+sig,
		"!!!."+parts[1]+"."+sig,
		enc.EncodeToString([]byte(`{"alg":"hs256"}`))+"."+parts[1]+"."+sig,
		enc.EncodeToString([]byte(`{"alg":"HS256","alg":"none"}`))+"."+parts[1]+"."+sig,
		enc.EncodeToString([]byte(`{"alg":"none"}`))+"."+parts[1]+".",
		enc.EncodeToString([]byte(`[]`))+"."+parts[1]+"."+sig,
		noneToken("none"), noneToken("HS256"), "", ".", "..", "a.b.c",
	)
	// Payloads that are not a JSON object, correctly signed.
	for _, p := range []string{`[]`, `"x"`, `{"sub":`, `null`} {
		tokens = append(tokens, signRaw(t, `{"alg":"HS256","typ":"JWT"}`, p))
	}

	fast := hmacVerifier(t)
	slow := token.WithoutFastHMAC(fast)
	kind := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, token.ErrTokenExpired):
			return "expired"
		case errors.Is(err, token.ErrTokenNotValidYet):
			return "not valid yet"
		case errors.Is(err, token.ErrInvalidToken):
			return "invalid"
		}
		return "other: " + err.Error()
	}
	accepted := 0
	for _, tok := range tokens {
		gotC, errF := fast.VerifyConnectToken(tok, false)
		wantC, errS := slow.VerifyConnectToken(tok, false)
		if kind(errF) != kind(errS) || !reflect.DeepEqual(gotC, wantC) {
			t.Errorf("connect token %q: fast %+v, %v; golang-jwt %+v, %v", tok, gotC, errF, wantC, errS)
		}
		gotS, errF := fast.VerifySubscribeToken(tok, true)
		wantS, errS := slow.VerifySubscribeToken(tok, true)
		if kind(errF) != kind(errS) || !reflect.DeepEqual(gotS, wantS) {
			t.Errorf("subscription token %q: fast %+v, %v; golang-jwt %+v, %v", tok, gotS, errF, wantS, errS)
		}
		if errF == nil {
			accepted++
		}
	}
	if accepted == 0 {
		t.Fatal("no token accepted: the corpus tests nothing")
	}
}

// signRaw signs header.payload with HS256 and the test secret.
func signRaw(t *testing.T, header, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(input, []byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc.EncodeToString(sig)
}
