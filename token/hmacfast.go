package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"strings"
	"sync"
	"unsafe"
)

// HMAC tokens are checked here rather than by golang-jwt when the verifier
// holds an HMAC secret: a connect spends 14 % of the server's CPU in token
// verification, and most of it went to golang-jwt's generic parsing (the
// header decoded into a map, a JSON decoder per token, a new HMAC per
// token). This path decodes the header only when it is not one of the
// usual ones, reuses HMAC states, and checks the signature before it
// decodes the claims. Anything it does not handle (another algorithm, a
// malformed token) goes to golang-jwt, so that errors and every other
// algorithm stay as they were. One difference: a payload with bytes after
// its JSON object is refused here, where golang-jwt's decoder ignored them.

// hmacAlg is one of HS256, HS384, HS512 with the verifier's secret.
type hmacAlg struct {
	size   int
	states sync.Pool // *hmacState
}

// hmacState is what one verification needs, reused across tokens.
type hmacState struct {
	mac hash.Hash
	sum [sha512.Size]byte
	buf []byte
}

// fastHMAC holds the HMAC algorithms and the encoded headers that need no
// decoding.
type fastHMAC struct {
	algs    map[string]*hmacAlg // by alg name
	headers map[string]*hmacAlg // by base64url-encoded header
}

func newFastHMAC(key []byte) *fastHMAC {
	f := &fastHMAC{algs: map[string]*hmacAlg{}, headers: map[string]*hmacAlg{}}
	for _, a := range []struct {
		name string
		h    func() hash.Hash
	}{{"HS256", sha256.New}, {"HS384", sha512.New384}, {"HS512", sha512.New}} {
		alg := &hmacAlg{size: a.h().Size()}
		alg.states.New = func() any { return &hmacState{mac: hmac.New(a.h, key)} }
		f.algs[a.name] = alg
		for _, hdr := range []string{
			`{"alg":"` + a.name + `","typ":"JWT"}`,
			`{"typ":"JWT","alg":"` + a.name + `"}`,
			`{"alg":"` + a.name + `"}`,
		} {
			f.headers[base64.RawURLEncoding.EncodeToString([]byte(hdr))] = alg
		}
	}
	return f
}

var errSignature = errors.New("signature is invalid")

// verify checks an HMAC token and decodes its claims into claims. handled
// is false when the token is not one this path decides on; golang-jwt
// then does.
func (f *fastHMAC) verify(token string, claims any) (handled bool, err error) {
	header, rest, ok := strings.Cut(token, ".")
	if !ok {
		return false, nil
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sig, ".") {
		return false, nil
	}
	alg := f.headers[header]
	if alg == nil {
		if alg = f.decodeHeader(header); alg == nil {
			return false, nil
		}
	}
	var got [sha512.Size]byte
	if base64.RawURLEncoding.DecodedLen(len(sig)) != alg.size {
		return true, errSignature
	}
	if _, err := base64.RawURLEncoding.Decode(got[:], readOnlyBytes(sig)); err != nil {
		return true, errSignature
	}
	st := alg.states.Get().(*hmacState)
	defer alg.states.Put(st)
	st.mac.Reset()
	st.mac.Write(readOnlyBytes(token[:len(header)+1+len(payload)]))
	if !hmac.Equal(st.mac.Sum(st.sum[:0]), got[:alg.size]) {
		return true, errSignature
	}
	st.buf = grow(st.buf, base64.RawURLEncoding.DecodedLen(len(payload)))
	n, err := base64.RawURLEncoding.Decode(st.buf, readOnlyBytes(payload))
	if err != nil {
		return true, invalid("decode payload: %v", err)
	}
	// Unmarshal copies what it keeps (strings, raw messages), so the
	// buffer can serve the next token.
	if err := json.Unmarshal(st.buf[:n], claims); err != nil {
		return true, invalid("decode claims: %v", err)
	}
	return true, nil
}

// decodeHeader returns the algorithm of a header that is not one of the
// usual encodings, or nil when it is not an HMAC one.
func (f *fastHMAC) decodeHeader(header string) *hmacAlg {
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return nil
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return nil
	}
	return f.algs[h.Alg]
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// readOnlyBytes views s as bytes without copying, for calls that only
// read their argument (decoding, hashing).
func readOnlyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
