package hooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the HTTP header carrying a request's signature.
const SignatureHeader = "X-Gyre-Signature"

// sign returns the SignatureHeader value of body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">".
func sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of VerifySignature.
var (
	// ErrSignatureInvalid: the header is malformed or no v1 matches.
	ErrSignatureInvalid = errors.New("hooks: invalid signature")
	// ErrSignatureExpired: the signature's t is further from now than
	// the tolerance (a replayed request).
	ErrSignatureExpired = errors.New("hooks: signature too old or too new")
)

// VerifySignature checks the SignatureHeader value header of a request
// whose raw body is body, for a backend written in Go: some v1 must be
// the HMAC-SHA256 under secret of "<t>.<body>", and t within tolerance of
// now (a tolerance of zero skips that check). Unknown keys in the header
// are ignored, so that a later scheme can be sent beside v1.
func VerifySignature(header string, body, secret []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", ErrSignatureInvalid, part)
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil {
				return fmt.Errorf("%w: v1 is not hex", ErrSignatureInvalid)
			}
			sigs = append(sigs, sig)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: t %q is not a Unix time", ErrSignatureInvalid, ts)
	}
	want := mac(secret, ts, body)
	matched := false
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("%w: no v1 matches", ErrSignatureInvalid)
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(sec, 0)).Abs(); d > tolerance {
			return fmt.Errorf("%w: %s off", ErrSignatureExpired, d.Round(time.Second))
		}
	}
	return nil
}
