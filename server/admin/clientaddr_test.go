package admin

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tc := range []struct {
		name, peer string
		header     http.Header
		want       string
	}{
		{"no proxy", "203.0.113.7:4000", nil, "203.0.113.7"},
		{"untrusted peer's headers ignored", "203.0.113.7:4000",
			http.Header{"X-Forwarded-For": {"198.51.100.1"}, "X-Real-Ip": {"198.51.100.2"}, "Forwarded": {"for=198.51.100.3"}}, "203.0.113.7"},
		{"trusted peer without headers", "10.1.2.3:4000", nil, "10.1.2.3"},
		{"x-forwarded-for", "10.1.2.3:4000", http.Header{"X-Forwarded-For": {"198.51.100.1"}}, "198.51.100.1"},
		{"x-forwarded-for through two proxies", "10.1.2.3:4000", http.Header{"X-Forwarded-For": {"198.51.100.1, 10.9.9.9"}}, "198.51.100.1"},
		{"client-written hops before the client", "10.1.2.3:4000", http.Header{"X-Forwarded-For": {"1.1.1.1, 2.2.2.2", "198.51.100.1"}}, "198.51.100.1"},
		{"only trusted hops", "10.1.2.3:4000", http.Header{"X-Forwarded-For": {"10.5.5.5, 10.9.9.9"}}, "10.5.5.5"},
		{"hop with a port", "10.1.2.3:4000", http.Header{"X-Forwarded-For": {"198.51.100.1:5555"}}, "198.51.100.1"},
		{"unreadable hop", "10.1.2.3:4000", http.Header{"X-Forwarded-For": {"198.51.100.1, nonsense"}}, "10.1.2.3"},
		{"x-forwarded-for wins over x-real-ip", "10.1.2.3:4000", http.Header{"X-Forwarded-For": {"198.51.100.1"}, "X-Real-Ip": {"198.51.100.2"}}, "198.51.100.1"},
		{"x-real-ip", "10.1.2.3:4000", http.Header{"X-Real-Ip": {"198.51.100.2"}}, "198.51.100.2"},
		{"forwarded", "10.1.2.3:4000", http.Header{"Forwarded": {`for="[2001:db8::1]:443";proto=https, for=10.9.9.9`}}, "2001:db8::1"},
		{"forwarded, obfuscated hop", "10.1.2.3:4000", http.Header{"Forwarded": {"for=_hidden"}}, "10.1.2.3"},
		{"ipv6 peer", "[fd00::1]:4000", http.Header{"X-Forwarded-For": {"::ffff:198.51.100.9"}}, "198.51.100.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/admin/auth", nil)
			r.RemoteAddr = tc.peer
			r.Header = tc.header
			if r.Header == nil {
				r.Header = http.Header{}
			}
			if got := clientAddr(r, trusted); got.String() != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLoginKey(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	for addr, want := range map[string]string{
		"198.51.100.1":          "198.51.100.1",
		"2001:db8:1:2:3:4:5:6":  "2001:db8:1:2::/64",
		"2001:db8:1:2:ff::ffff": "2001:db8:1:2::/64",
	} {
		if got := loginKey(netip.MustParseAddr(addr), r); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}
