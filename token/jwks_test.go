package token_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gyrehq/gyre/token"
)

var b64u = base64.RawURLEncoding.EncodeToString

func jwkRSA(kid string, pub *rsa.PublicKey) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig",
		"n": b64u(pub.N.Bytes()), "e": b64u(big.NewInt(int64(pub.E)).Bytes())}
}

func jwkEC(kid string, pub *ecdsa.PublicKey) map[string]any {
	pt := must(pub.Bytes())
	size := (len(pt) - 1) / 2
	return map[string]any{"kty": "EC", "kid": kid, "crv": pub.Curve.Params().Name,
		"x": b64u(pt[1 : 1+size]), "y": b64u(pt[1+size:])}
}

func jwkEd(kid string, pub ed25519.PublicKey) map[string]any {
	return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64u(pub)}
}

// keyServer serves JWKS documents per path and counts requests, so tests can
// check when the cache goes to the network.
type keyServer struct {
	*httptest.Server
	mu     sync.Mutex
	sets   map[string][]map[string]any // path -> keys
	status int
	hits   atomic.Int64
}

func newKeyServer(t *testing.T) *keyServer {
	ks := &keyServer{sets: map[string][]map[string]any{}, status: http.StatusOK}
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.hits.Add(1)
		ks.mu.Lock()
		defer ks.mu.Unlock()
		if ks.status != http.StatusOK {
			w.WriteHeader(ks.status)
			return
		}
		keys, ok := ks.sets[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}))
	t.Cleanup(ks.Close)
	return ks
}

func (ks *keyServer) serve(path string, keys ...map[string]any) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.sets[path] = keys
}

func (ks *keyServer) setStatus(code int) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.status = code
}

func kid(k string) map[string]any { return map[string]any{"kid": k} }

func TestJWKS(t *testing.T) {
	ks := newKeyServer(t)
	encKey := jwkRSA("enc1", &rsaOther().PublicKey)
	encKey["use"] = "enc"
	ks.serve("/certs",
		jwkRSA("r1", &rsaKey().PublicKey),
		jwkEC("e1", &ecKey(elliptic.P256()).PublicKey),
		jwkEC("e3", &ecKey(elliptic.P384()).PublicKey),
		jwkEd("d1", edKey().Public().(ed25519.PublicKey)),
		encKey,
		map[string]any{"kty": "oct", "kid": "h1", "k": b64u([]byte(testSecret))},
	)
	// The static HMAC secret must be ignored once JWKS is configured.
	v := newVerifier(t, token.Config{JWKSPublicEndpoint: ks.URL + "/certs", HMACSecretKey: testSecret})
	claims := jwt.MapClaims{"sub": "42"}
	tests := []struct {
		name string
		tok  string
		ok   bool
	}{
		{"RS256", sign(t, jwt.SigningMethodRS256, rsaKey(), claims, kid("r1")), true},
		{"PS512", sign(t, jwt.SigningMethodPS512, rsaKey(), claims, kid("r1")), true},
		{"ES256", sign(t, jwt.SigningMethodES256, ecKey(elliptic.P256()), claims, kid("e1")), true},
		{"ES384", sign(t, jwt.SigningMethodES384, ecKey(elliptic.P384()), claims, kid("e3")), true},
		{"EdDSA", sign(t, jwt.SigningMethodEdDSA, edKey(), claims, kid("d1")), true},
		{"no kid", sign(t, jwt.SigningMethodRS256, rsaKey(), claims, nil), false},
		{"unknown kid", sign(t, jwt.SigningMethodRS256, rsaKey(), claims, kid("zz")), false},
		{"wrong key for kid", sign(t, jwt.SigningMethodRS256, rsaOther(), claims, kid("r1")), false},
		{"ES256 under RSA kid", sign(t, jwt.SigningMethodES256, ecKey(elliptic.P256()), claims, kid("r1")), false},
		{"ES256 under P-384 kid", sign(t, jwt.SigningMethodES256, ecKey(elliptic.P256()), claims, kid("e3")), false},
		{"RS256 under EC kid", sign(t, jwt.SigningMethodRS256, rsaKey(), claims, kid("e1")), false},
		{"encryption key", sign(t, jwt.SigningMethodRS256, rsaOther(), claims, kid("enc1")), false},
		{"oct key", sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims, kid("h1")), false},
		{"static HMAC secret", sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims, kid("r1")), false},
		{"HS256 with RSA modulus as secret", sign(t, jwt.SigningMethodHS256, rsaKey().N.Bytes(), claims, kid("r1")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, err := v.VerifyConnectToken(tt.tok, false)
			if tt.ok {
				if err != nil || ct.UserID != "42" {
					t.Fatalf("verify: %+v, %v", ct, err)
				}
				return
			}
			if !errors.Is(err, token.ErrInvalidToken) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
		})
	}
	// One fetch served every known kid; the unknown kid asked again at most
	// once, since the refresh interval had not passed.
	if h := ks.hits.Load(); h > 2 {
		t.Fatalf("%d fetches, want at most 2", h)
	}
	t.Run("subscription tokens", func(t *testing.T) {
		tok := sign(t, jwt.SigningMethodRS256, rsaKey(), jwt.MapClaims{"sub": "42", "channel": "c"}, kid("r1"))
		if _, err := v.VerifySubscribeToken(tok, false); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJWKSRotation(t *testing.T) {
	ks := newKeyServer(t)
	ks.serve("/certs", jwkRSA("old", &rsaKey().PublicKey))
	v := newVerifier(t, token.Config{JWKSPublicEndpoint: ks.URL + "/certs"})
	oldTok := sign(t, jwt.SigningMethodRS256, rsaKey(), jwt.MapClaims{"sub": "1"}, kid("old"))
	newTok := sign(t, jwt.SigningMethodRS256, rsaOther(), jwt.MapClaims{"sub": "1"}, kid("new"))

	if _, err := v.VerifyConnectToken(oldTok, false); err != nil {
		t.Fatalf("old kid: %v", err)
	}
	ks.serve("/certs", jwkRSA("new", &rsaOther().PublicKey))
	// Within the refresh interval an unknown kid does not reach the server.
	if _, err := v.VerifyConnectToken(newTok, false); !errors.Is(err, token.ErrInvalidToken) {
		t.Fatalf("new kid before refresh: err = %v", err)
	}
	if h := ks.hits.Load(); h != 1 {
		t.Fatalf("%d fetches before refresh, want 1", h)
	}
	token.SetJWKSRefreshInterval(v, 0)
	if _, err := v.VerifyConnectToken(newTok, false); err != nil {
		t.Fatalf("new kid after refresh: %v", err)
	}
	// A fetch replaces the whole set, so the retired kid is gone.
	if _, err := v.VerifyConnectToken(oldTok, false); !errors.Is(err, token.ErrInvalidToken) {
		t.Fatalf("retired kid: err = %v, want ErrInvalidToken", err)
	}
}

func TestJWKSEndpointFailure(t *testing.T) {
	tok := sign(t, jwt.SigningMethodRS256, rsaKey(), jwt.MapClaims{"sub": "1"}, kid("r1"))
	tests := []struct {
		name  string
		setup func(ks *keyServer) string
	}{
		{"server error", func(ks *keyServer) string { ks.setStatus(http.StatusInternalServerError); return "/certs" }},
		{"not found", func(ks *keyServer) string { return "/missing" }},
		{"closed", func(ks *keyServer) string { ks.Close(); return "/certs" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := newKeyServer(t)
			ks.serve("/certs", jwkRSA("r1", &rsaKey().PublicKey))
			v := newVerifier(t, token.Config{JWKSPublicEndpoint: ks.URL + tt.setup(ks)})
			for range 3 {
				if _, err := v.VerifyConnectToken(tok, false); !errors.Is(err, token.ErrInvalidToken) {
					t.Fatalf("err = %v, want ErrInvalidToken", err)
				}
			}
			// One failed fetch plus its retry; later tokens wait out the
			// refresh interval instead of hammering the endpoint.
			if h := ks.hits.Load(); h > 2 {
				t.Fatalf("%d requests, want at most 2", h)
			}
		})
	}
}

func TestJWKSBadDocument(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"keys": [ {"kty": "RSA", "kid": "r1", "n": "!!", "e": "AQAB"} ]`))
	}))
	defer srv.Close()
	v := newVerifier(t, token.Config{JWKSPublicEndpoint: srv.URL})
	tok := sign(t, jwt.SigningMethodRS256, rsaKey(), jwt.MapClaims{}, kid("r1"))
	if _, err := v.VerifyConnectToken(tok, false); !errors.Is(err, token.ErrInvalidToken) {
		t.Fatalf("err = %v, want ErrInvalidToken", err)
	}
}

func TestJWKSConcurrentMiss(t *testing.T) {
	ks := newKeyServer(t)
	ks.serve("/certs", jwkRSA("r1", &rsaKey().PublicKey))
	v := newVerifier(t, token.Config{JWKSPublicEndpoint: ks.URL + "/certs"})
	tok := sign(t, jwt.SigningMethodRS256, rsaKey(), jwt.MapClaims{"sub": "1"}, kid("r1"))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := v.VerifyConnectToken(tok, false); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if h := ks.hits.Load(); h != 1 {
		t.Fatalf("%d fetches for one cold kid, want 1", h)
	}
}

// Two tenants publish the same kid with different keys. A token claiming
// tenant b but signed with tenant a's key must fail even when a's key is
// cached first: keys are cached per resolved endpoint, not per kid.
func TestJWKSTemplate(t *testing.T) {
	ks := newKeyServer(t)
	ks.serve("/realms/a/certs", jwkRSA("k", &rsaKey().PublicKey))
	ks.serve("/realms/b/certs", jwkRSA("k", &rsaOther().PublicKey))
	v := newVerifier(t, token.Config{
		JWKSPublicEndpoint: ks.URL + "/realms/{{realm}}/certs",
		IssuerRegex:        `^https://idp\.example/realms/(?P<realm>[a-z.]+)$`,
	})
	iss := func(realm string) jwt.MapClaims {
		return jwt.MapClaims{"sub": "u", "iss": "https://idp.example/realms/" + realm}
	}
	tests := []struct {
		name string
		tok  string
		ok   bool
	}{
		{"tenant a", sign(t, jwt.SigningMethodRS256, rsaKey(), iss("a"), kid("k")), true},
		{"tenant b", sign(t, jwt.SigningMethodRS256, rsaOther(), iss("b"), kid("k")), true},
		{"tenant b with a's key", sign(t, jwt.SigningMethodRS256, rsaKey(), iss("b"), kid("k")), false},
		{"unknown tenant", sign(t, jwt.SigningMethodRS256, rsaKey(), iss("c"), kid("k")), false},
		{"path climbing", sign(t, jwt.SigningMethodRS256, rsaKey(), iss(".."), kid("k")), false},
		{"issuer not matching", sign(t, jwt.SigningMethodRS256, rsaKey(),
			jwt.MapClaims{"iss": "https://evil.example/realms/a"}, kid("k")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.VerifyConnectToken(tt.tok, false)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !strings.HasPrefix(err.Error(), token.ErrInvalidToken.Error()) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
		})
	}
}

func TestJWKSTemplateFromAudience(t *testing.T) {
	ks := newKeyServer(t)
	ks.serve("/t/acme/keys", jwkEC("k", &ecKey(elliptic.P256()).PublicKey))
	v := newVerifier(t, token.Config{
		JWKSPublicEndpoint: ks.URL + "/t/{{tenant}}/keys",
		AudienceRegex:      `^gyre-(?P<tenant>\w+)$`,
	})
	tok := sign(t, jwt.SigningMethodES256, ecKey(elliptic.P256()),
		jwt.MapClaims{"sub": "u", "aud": []string{"other", "gyre-acme"}}, kid("k"))
	if _, err := v.VerifyConnectToken(tok, false); err != nil {
		t.Fatal(err)
	}
}
