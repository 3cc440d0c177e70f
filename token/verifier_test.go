package token_test

import (
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

// allKeys configures every static key family.
func allKeys(t testing.TB, curve elliptic.Curve) token.Config {
	return token.Config{
		HMACSecretKey:  testSecret,
		RSAPublicKey:   pemOf(t, &rsaKey().PublicKey),
		ECDSAPublicKey: pemOf(t, &ecKey(curve).PublicKey),
	}
}

func TestAlgorithms(t *testing.T) {
	tests := []struct {
		method jwt.SigningMethod
		key    func() any
		curve  elliptic.Curve
	}{
		{jwt.SigningMethodHS256, func() any { return []byte(testSecret) }, elliptic.P256()},
		{jwt.SigningMethodHS384, func() any { return []byte(testSecret) }, elliptic.P256()},
		{jwt.SigningMethodHS512, func() any { return []byte(testSecret) }, elliptic.P256()},
		{jwt.SigningMethodRS256, func() any { return rsaKey() }, elliptic.P256()},
		{jwt.SigningMethodRS384, func() any { return rsaKey() }, elliptic.P256()},
		{jwt.SigningMethodRS512, func() any { return rsaKey() }, elliptic.P256()},
		{jwt.SigningMethodPS256, func() any { return rsaKey() }, elliptic.P256()},
		{jwt.SigningMethodPS384, func() any { return rsaKey() }, elliptic.P256()},
		{jwt.SigningMethodPS512, func() any { return rsaKey() }, elliptic.P256()},
		{jwt.SigningMethodES256, func() any { return ecKey(elliptic.P256()) }, elliptic.P256()},
		{jwt.SigningMethodES384, func() any { return ecKey(elliptic.P384()) }, elliptic.P384()},
		{jwt.SigningMethodES512, func() any { return ecKey(elliptic.P521()) }, elliptic.P521()},
	}
	for _, tt := range tests {
		t.Run(tt.method.Alg(), func(t *testing.T) {
			v := newVerifier(t, allKeys(t, tt.curve))
			tok := sign(t, tt.method, tt.key(), jwt.MapClaims{"sub": "42", "exp": inHour()}, nil)
			ct, err := v.VerifyConnectToken(tok, false)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if ct.UserID != "42" {
				t.Fatalf("UserID = %q, want 42", ct.UserID)
			}
		})
	}
}

// noneToken builds an unsigned token by hand, as an attacker would.
func noneToken(alg string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"`+alg+`","typ":"JWT"}`)) + "." +
		enc.EncodeToString([]byte(`{"sub":"admin"}`)) + "."
}

func TestRefused(t *testing.T) {
	rsaPEM := pemOf(t, &rsaKey().PublicKey)
	claims := jwt.MapClaims{"sub": "42"}
	tests := []struct {
		name string
		cfg  token.Config
		tok  func(t *testing.T) string
	}{
		{"none", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			return sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims, nil)
		}},
		{"none by hand", allKeys(t, elliptic.P256()), func(*testing.T) string { return noneToken("none") }},
		{"None by hand", allKeys(t, elliptic.P256()), func(*testing.T) string { return noneToken("None") }},
		{"no alg", allKeys(t, elliptic.P256()), func(*testing.T) string { return noneToken("") }},
		{"HS with RSA PEM as secret", token.Config{RSAPublicKey: rsaPEM}, func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, []byte(rsaPEM), claims, nil)
		}},
		{"HS with RSA PEM as secret, HMAC also set", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, []byte(rsaPEM), claims, nil)
		}},
		{"HS without HMAC secret", token.Config{RSAPublicKey: rsaPEM}, func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims, nil)
		}},
		{"RS without RSA key", token.Config{HMACSecretKey: testSecret}, func(t *testing.T) string {
			return sign(t, jwt.SigningMethodRS256, rsaKey(), claims, nil)
		}},
		{"ES without ECDSA key", token.Config{HMACSecretKey: testSecret}, func(t *testing.T) string {
			return sign(t, jwt.SigningMethodES256, ecKey(elliptic.P256()), claims, nil)
		}},
		{"ES384 with a P-256 key", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			return sign(t, jwt.SigningMethodES384, ecKey(elliptic.P384()), claims, nil)
		}},
		{"EdDSA never static", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			return sign(t, jwt.SigningMethodEdDSA, edKey(), claims, nil)
		}},
		{"wrong HMAC secret", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, []byte("another secret"), claims, nil)
		}},
		{"wrong RSA key", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			return sign(t, jwt.SigningMethodRS256, rsaOther(), claims, nil)
		}},
		{"wrong ECDSA key", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			return sign(t, jwt.SigningMethodES256, ecOther(), claims, nil)
		}},
		{"no keys at all", token.Config{}, func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims, nil)
		}},
		{"tampered payload", allKeys(t, elliptic.P256()), func(t *testing.T) string {
			tok := sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims, nil)
			parts := strings.Split(tok, ".")
			parts[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"43"}`))
			return strings.Join(parts, ".")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, tt.cfg)
			_, err := v.VerifyConnectToken(tt.tok(t), false)
			if !errors.Is(err, token.ErrInvalidToken) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	header := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	// signed MACs a raw header and payload so that only their content is bad.
	signed := func(h, p string) string {
		sig, err := jwt.SigningMethodHS256.Sign(h+"."+p, []byte(testSecret))
		if err != nil {
			t.Fatal(err)
		}
		return h + "." + p + "." + enc(sig)
	}
	valid := hs256(t, jwt.MapClaims{"sub": "42"})
	tests := []struct {
		name, tok string
	}{
		{"empty", ""},
		{"one part", "abc"},
		{"two dots", ".."},
		{"two parts", "a.b"},
		{"four parts", valid + ".x"},
		{"bad base64 header", "!!!." + strings.SplitN(valid, ".", 2)[1]},
		{"bad base64 signature", valid[:strings.LastIndex(valid, ".")] + ".***"},
		{"header not JSON", signed(enc([]byte("not json")), enc([]byte(`{"sub":"42"}`)))},
		{"header an array", signed(enc([]byte(`["HS256"]`)), enc([]byte(`{"sub":"42"}`)))},
		{"payload not JSON", signed(header, enc([]byte(`{"sub":`)))},
		{"payload an array", signed(header, enc([]byte(`[1,2]`)))},
		{"sub a number", signed(header, enc([]byte(`{"sub":42}`)))},
		{"exp a string", signed(header, enc([]byte(`{"sub":"42","exp":"soon"}`)))},
		{"channels not a list", signed(header, enc([]byte(`{"channels":"news"}`)))},
		{"subs not a map", signed(header, enc([]byte(`{"subs":["news"]}`)))},
		{"override not an object", signed(header, enc([]byte(`{"subs":{"c":{"override":{"presence":true}}}}`)))},
		{"bad b64info", signed(header, enc([]byte(`{"b64info":"%%%"}`)))},
		{"bad b64data in subs", signed(header, enc([]byte(`{"subs":{"c":{"b64data":"%%%"}}}`)))},
		{"huge", valid + strings.Repeat("A", token.DefaultMaxTokenLength)},
	}
	v := hmacVerifier(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.VerifyConnectToken(tt.tok, false)
			if !errors.Is(err, token.ErrInvalidToken) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	tests := []struct {
		name       string
		claims     jwt.MapClaims
		skipExpiry bool
		wantErr    error
		wantExpire func(jwt.MapClaims) int64
	}{
		{"no exp", jwt.MapClaims{}, false, nil, func(jwt.MapClaims) int64 { return 0 }},
		{"exp ahead", jwt.MapClaims{"exp": inHour()}, false, nil,
			func(c jwt.MapClaims) int64 { return c["exp"].(int64) }},
		{"exp passed", jwt.MapClaims{"exp": hourAgo()}, false, token.ErrTokenExpired, nil},
		{"exp passed, skipped", jwt.MapClaims{"exp": hourAgo()}, true, nil,
			func(c jwt.MapClaims) int64 { return c["exp"].(int64) }},
		{"expire_at 0 means never", jwt.MapClaims{"exp": inHour(), "expire_at": 0}, false, nil,
			func(jwt.MapClaims) int64 { return 0 }},
		{"expire_at wins over exp", jwt.MapClaims{"exp": inHour(), "expire_at": 1 << 40}, false, nil,
			func(jwt.MapClaims) int64 { return 1 << 40 }},
		{"expire_at does not rescue exp", jwt.MapClaims{"exp": hourAgo(), "expire_at": 0}, false, token.ErrTokenExpired, nil},
		{"nbf ahead", jwt.MapClaims{"nbf": inHour()}, false, token.ErrTokenNotValidYet, nil},
		{"nbf ahead, expiry skipped", jwt.MapClaims{"nbf": inHour()}, true, token.ErrTokenNotValidYet, nil},
		{"nbf ahead and exp passed", jwt.MapClaims{"nbf": inHour(), "exp": hourAgo()}, false, token.ErrTokenExpired, nil},
		// As in Centrifugo, claims past the registered ones are read
		// after the time: a fresh token is asked for first.
		{"exp passed, bad b64info", jwt.MapClaims{"exp": hourAgo(), "b64info": "%%%"}, false, token.ErrTokenExpired, nil},
		{"nbf passed", jwt.MapClaims{"nbf": hourAgo()}, false, nil, func(jwt.MapClaims) int64 { return 0 }},
		{"iat ahead is not checked", jwt.MapClaims{"iat": inHour()}, false, nil, func(jwt.MapClaims) int64 { return 0 }},
	}
	v := hmacVerifier(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.claims["sub"] = "42"
			ct, err := v.VerifyConnectToken(hs256(t, tt.claims), tt.skipExpiry)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if want := tt.wantExpire(tt.claims); ct.ExpireAt != want {
				t.Fatalf("ExpireAt = %d, want %d", ct.ExpireAt, want)
			}
		})
	}
}

// The time errors stand alone: a caller that maps ErrInvalidToken to "refuse
// for good" must never see a token that only needs time (or a refresh) there.
func TestTimeErrorsAreNotInvalid(t *testing.T) {
	v := hmacVerifier(t)
	tests := []struct {
		name   string
		claims jwt.MapClaims
		want   error
	}{
		{"expired", jwt.MapClaims{"exp": hourAgo()}, token.ErrTokenExpired},
		{"not valid yet", jwt.MapClaims{"nbf": inHour()}, token.ErrTokenNotValidYet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.claims["sub"] = "42"
			_, cerr := v.VerifyConnectToken(hs256(t, tt.claims), false)
			tt.claims["channel"] = "news"
			_, serr := v.VerifySubscribeToken(hs256(t, tt.claims), false)
			for _, err := range []error{cerr, serr} {
				if !errors.Is(err, tt.want) || errors.Is(err, token.ErrInvalidToken) {
					t.Fatalf("err = %v, want %v and not ErrInvalidToken", err, tt.want)
				}
			}
		})
	}
}

// An expired token that is also wrong in another way is invalid, not
// expired: refreshing would not help it.
func TestExpiredButInvalid(t *testing.T) {
	v := newVerifier(t, token.Config{HMACSecretKey: testSecret, Audience: "gyre"})
	tests := []struct {
		name string
		tok  string
	}{
		{"wrong audience", hs256(t, jwt.MapClaims{"exp": hourAgo(), "aud": "other"})},
		{"wrong key", sign(t, jwt.SigningMethodHS256, []byte("nope"), jwt.MapClaims{"exp": hourAgo(), "aud": "gyre"}, nil)},
		{"not valid yet, wrong audience", hs256(t, jwt.MapClaims{"nbf": inHour(), "aud": "other"})},
		{"not valid yet, wrong key", sign(t, jwt.SigningMethodHS256, []byte("nope"), jwt.MapClaims{"nbf": inHour(), "aud": "gyre"}, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.VerifyConnectToken(tt.tok, false)
			if !errors.Is(err, token.ErrInvalidToken) || errors.Is(err, token.ErrTokenExpired) || errors.Is(err, token.ErrTokenNotValidYet) {
				t.Fatalf("err = %v, want only ErrInvalidToken", err)
			}
		})
	}
}

// The jwt.io sample token (MAC checked with Python's hmac module), made by
// another implementation.
func TestInterop(t *testing.T) {
	const tok = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	v := newVerifier(t, token.Config{HMACSecretKey: "your-256-bit-secret"})
	ct, err := v.VerifyConnectToken(tok, false)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if ct.UserID != "1234567890" {
		t.Fatalf("UserID = %q", ct.UserID)
	}
}

func TestConcurrentUse(t *testing.T) {
	v := newVerifier(t, allKeys(t, elliptic.P256()))
	toks := []string{
		hs256(t, jwt.MapClaims{"sub": "1"}),
		sign(t, jwt.SigningMethodRS256, rsaKey(), jwt.MapClaims{"sub": "2"}, nil),
		sign(t, jwt.SigningMethodES256, ecKey(elliptic.P256()), jwt.MapClaims{"sub": "3"}, nil),
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for i := range 30 {
				if _, e := v.VerifyConnectToken(toks[i%len(toks)], false); e != nil {
					err = e
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
