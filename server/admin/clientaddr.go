package admin

import (
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address of the client that sent r. Forwarding headers
// say who the client is only when the socket peer is a trusted proxy
// (anyone else could write them); then X-Forwarded-For is read, else
// X-Real-IP, else Forwarded. The peer itself is the answer when it is not
// trusted or when the header it sent cannot be read. The zero Addr means
// not even RemoteAddr parses (a handler served without a socket).
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := parseHop(r.RemoteAddr)
	if !peer.IsValid() || !isTrusted(peer, trusted) {
		return peer
	}
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		return orPeer(nearestUntrusted(splitList(xff), trusted), peer)
	}
	if xri := r.Header.Get("X-Real-IP"); xri != "" {
		return orPeer(parseHop(xri), peer)
	}
	if fwd := r.Header.Values("Forwarded"); len(fwd) > 0 {
		return orPeer(nearestUntrusted(forwardedFor(fwd), trusted), peer)
	}
	return peer
}

func orPeer(a, peer netip.Addr) netip.Addr {
	if a.IsValid() {
		return a
	}
	return peer
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// nearestUntrusted walks a chain of hops (the client first, each proxy
// appending the address it got the request from) from its end: the first
// hop no trusted proxy stands for is the client, since whatever lies
// before it was written by that client. A chain of trusted proxies only
// gives its first hop; a hop that does not parse ends the walk with the
// zero Addr.
func nearestUntrusted(hops []string, trusted []netip.Prefix) netip.Addr {
	for i := len(hops) - 1; i >= 0; i-- {
		a := parseHop(hops[i])
		if !a.IsValid() || !isTrusted(a, trusted) || i == 0 {
			return a
		}
	}
	return netip.Addr{}
}

// parseHop reads an address as proxies write it: an IP, an IP with a
// port, IPv6 in brackets with or without a port, possibly quoted.
func parseHop(s string) netip.Addr {
	s = strings.Trim(strings.TrimSpace(s), `"`)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

// splitList joins the values of a repeated list header into its items.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}

// forwardedFor is the for= of each element of Forwarded headers (RFC
// 7239), "" where an element has none (that hop is unknown).
func forwardedFor(values []string) []string {
	elems := splitList(values)
	out := make([]string, len(elems))
	for i, e := range elems {
		for _, pair := range strings.Split(e, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if ok && strings.EqualFold(k, "for") {
				out[i] = v
			}
		}
	}
	return out
}

// loginKey is what the login limit counts against: the client's IPv4
// address, or its IPv6 /64 (one host usually holds a whole /64, and would
// otherwise get a fresh budget per address).
func loginKey(a netip.Addr, r *http.Request) string {
	switch {
	case !a.IsValid():
		return r.RemoteAddr
	case a.Is6():
		return netip.PrefixFrom(a, 64).Masked().String()
	default:
		return a.String()
	}
}
