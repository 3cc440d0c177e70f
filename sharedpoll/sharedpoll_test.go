package sharedpoll_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/sharedpoll"
)

// Vectors computed outside Go (Python's hmac and hashlib), so that Sign
// and Verify are held to the format, not to each other.
var vectors = []struct {
	name, secret  string
	iat, exp      int64
	user, channel string
	keys          []string
	want          string
}{
	{"two keys", "secret", 1700000000, 1700003600, "42", "prices:btc", []string{"a", "b"},
		"1700000000:1700003600:1df1162091cb64ef759a0d55d35af1654f8eeab092d25d94956b487793e3d940"},
	{"anonymous, no keys, never expires", "k", 0, 0, "", "ch", nil,
		"0:0:200862664aa1af7f2543e189cb091cf8fdaff94e22926efc538043d95bfac469"},
}

func TestSignVectors(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			if got := sharedpoll.Sign(v.secret, v.iat, v.exp, v.user, v.channel, v.keys); got != v.want {
				t.Errorf("Sign = %s\nwant %s", got, v.want)
			}
			exp, err := sharedpoll.NewVerifier(v.secret, "", 0).Verify(v.want, v.user, v.channel, v.keys, time.Unix(v.iat, 0))
			if err != nil || exp != v.exp {
				t.Errorf("Verify = %d, %v; want %d, nil", exp, err, v.exp)
			}
		})
	}
}

// TestSignByHand builds a signature with crypto/hmac from the format's
// description, independently of the package.
func TestSignByHand(t *testing.T) {
	keys := []string{"eur", "usd", "with:colon"}
	kh := sha256.Sum256([]byte(strings.Join(keys, "\x00")))
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte("100\x00200\x00user-1\x00rates:fx\x00" + hex.EncodeToString(kh[:])))
	want := "100:200:" + hex.EncodeToString(mac.Sum(nil))
	if got := sharedpoll.Sign("s3cret", 100, 200, "user-1", "rates:fx", keys); got != want {
		t.Fatalf("Sign = %s\nwant %s", got, want)
	}
	if _, err := sharedpoll.NewVerifier("s3cret", "", 0).Verify(want, "user-1", "rates:fx", keys, time.Unix(150, 0)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerify(t *testing.T) {
	const secret = "secret"
	keys := []string{"a", "b"}
	now := time.Unix(1000, 0)
	good := sharedpoll.Sign(secret, 900, 2000, "u", "ns:ch", keys)
	v := sharedpoll.NewVerifier(secret, "", 0)
	mac := good[strings.LastIndexByte(good, ':')+1:]
	cases := []struct {
		name          string
		sig, user, ch string
		keys          []string
		now           time.Time
		wantExp       int64
		wantErr       error
	}{
		{"valid", good, "u", "ns:ch", keys, now, 2000, nil},
		{"other user", good, "v", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"anonymous", good, "", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"other channel", good, "u", "ns:other", keys, now, 0, sharedpoll.ErrBadSignature},
		{"keys reordered", good, "u", "ns:ch", []string{"b", "a"}, now, 0, sharedpoll.ErrBadSignature},
		{"key left out", good, "u", "ns:ch", []string{"a"}, now, 0, sharedpoll.ErrBadSignature},
		// Joined, these keys hash as a and b do: refused, or a client
		// could track a key the backend never signed.
		{"key holding the separator", good, "u", "ns:ch", []string{"a\x00b"}, now, 0, sharedpoll.ErrBadSignature},
		{"key added", good, "u", "ns:ch", []string{"a", "b", "c"}, now, 0, sharedpoll.ErrBadSignature},
		{"exp changed", "900:2001:" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"iat changed", "901:2000:" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"leading zero", "0900:2000:" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"uppercase mac", "900:2000:" + strings.ToUpper(mac), "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"mac one digit short", "900:2000:" + mac[1:], "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"within grace", good, "u", "ns:ch", keys, time.Unix(2005, 0), 2000, nil},
		{"past grace", good, "u", "ns:ch", keys, time.Unix(2006, 0), 2000, sharedpoll.ErrExpired},
		{"empty", "", "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"no mac", "900:2000", "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"extra part", good + ":x", "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"empty iat", ":2000:" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"empty exp", "900::" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"signed exp", "900:+2000:" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"negative exp", "900:-1:" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"exp beyond int64", "900:99999999999999999999:" + mac, "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
		{"not hex", "900:2000:" + strings.Repeat("g", 64), "u", "ns:ch", keys, now, 0, sharedpoll.ErrBadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exp, err := v.Verify(c.sig, c.user, c.ch, c.keys, c.now)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if exp != c.wantExp {
				t.Errorf("exp = %d, want %d", exp, c.wantExp)
			}
		})
	}
}

func TestVerifyExpiryRefusedOnlyForGenuine(t *testing.T) {
	// An expired forgery is a bad signature, not an expired one: the
	// error must not tell a forger which exp would have been valid.
	forged := "1:2:" + strings.Repeat("0", 64)
	_, err := sharedpoll.NewVerifier("s", "", 0).Verify(forged, "u", "c", nil, time.Unix(1e9, 0))
	if !errors.Is(err, sharedpoll.ErrBadSignature) {
		t.Fatalf("err = %v, want ErrBadSignature", err)
	}
}

func TestVerifyNeverExpires(t *testing.T) {
	sig := sharedpoll.Sign("s", 1, 0, "u", "c", []string{"k"})
	exp, err := sharedpoll.NewVerifier("s", "", 0).Verify(sig, "u", "c", []string{"k"}, time.Unix(1<<40, 0))
	if err != nil || exp != 0 {
		t.Fatalf("Verify = %d, %v; want 0, nil", exp, err)
	}
}

func TestVerifyWithoutSecret(t *testing.T) {
	// An HMAC under an empty key is well defined; a server without a
	// secret must still refuse it.
	sig := sharedpoll.Sign("", 1, 0, "u", "c", nil)
	if _, err := sharedpoll.NewVerifier("", "", 0).Verify(sig, "u", "c", nil, time.Unix(2, 0)); !errors.Is(err, sharedpoll.ErrBadSignature) {
		t.Fatalf("err = %v, want ErrBadSignature", err)
	}
}

func TestRotation(t *testing.T) {
	keys := []string{"k"}
	now := time.Unix(5000, 0)
	oldBefore := sharedpoll.Sign("old", 1000, 0, "u", "c", keys)
	oldAtCutoff := sharedpoll.Sign("old", 2000, 0, "u", "c", keys)
	oldAfter := sharedpoll.Sign("old", 2001, 0, "u", "c", keys)
	current := sharedpoll.Sign("new", 3000, 0, "u", "c", keys)
	other := sharedpoll.Sign("other", 1000, 0, "u", "c", keys)
	cases := []struct {
		name string
		v    *sharedpoll.Verifier
		sig  string
		ok   bool
	}{
		{"current secret", sharedpoll.NewVerifier("new", "old", 2000), current, true},
		{"previous, issued before the cutoff", sharedpoll.NewVerifier("new", "old", 2000), oldBefore, true},
		{"previous, issued at the cutoff", sharedpoll.NewVerifier("new", "old", 2000), oldAtCutoff, true},
		{"previous, issued after the cutoff", sharedpoll.NewVerifier("new", "old", 2000), oldAfter, false},
		{"previous without cutoff", sharedpoll.NewVerifier("new", "old", 0), oldAfter, true},
		{"previous not configured", sharedpoll.NewVerifier("new", "", 0), oldBefore, false},
		{"neither secret", sharedpoll.NewVerifier("new", "old", 0), other, false},
		{"current signature issued after the cutoff", sharedpoll.NewVerifier("new", "old", 10), current, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.v.Verify(c.sig, "u", "c", keys, now)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if err != nil && !errors.Is(err, sharedpoll.ErrBadSignature) {
				t.Errorf("err = %v, want ErrBadSignature", err)
			}
		})
	}
}

func TestRotationExpiry(t *testing.T) {
	// A signature of the previous secret expires like any other.
	sig := sharedpoll.Sign("old", 100, 200, "u", "c", nil)
	exp, err := sharedpoll.NewVerifier("new", "old", 150).Verify(sig, "u", "c", nil, time.Unix(300, 0))
	if !errors.Is(err, sharedpoll.ErrExpired) || exp != 200 {
		t.Fatalf("Verify = %d, %v; want 200, ErrExpired", exp, err)
	}
}
