package loadtest

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
)

// Every TCP connection needs a 4-tuple of its own. With one source and
// one destination address, the kernel finds each new connection a local
// port by scanning its ephemeral range (28,232 ports by default on
// Linux, even ones first) past the ports in use; past half the range
// each connect scans thousands of ports, and past the whole range it
// fails. Spreading connections over several source addresses gives each
// address its own ports and keeps the scan short, as real clients,
// which come from many addresses, do.

// autoSources is how many loopback source addresses connections to a
// loopback server spread over by default on Linux: enough for 28,000
// connections per address to stay far from a full port range.
const autoSources = 16

// maxSources bounds a --source-addrs list.
const maxSources = 4096

// SourcesAuto and SourcesNone are the special values of
// Config.SourceAddrs.
const (
	SourcesAuto = ""
	SourcesNone = "none"
)

// parseSources reads a comma-separated list of IP addresses and
// inclusive ranges (10.0.0.10-10.0.0.20).
func parseSources(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		from, to, isRange := strings.Cut(item, "-")
		first, err := netip.ParseAddr(from)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		last := first
		if isRange {
			if last, err = netip.ParseAddr(to); err != nil {
				return nil, fmt.Errorf("%q: %w", item, err)
			}
			if first.BitLen() != last.BitLen() || last.Less(first) {
				return nil, fmt.Errorf("%q: not a range from a lower to a higher address of one family", item)
			}
		}
		for a := first; ; a = a.Next() {
			if len(out) == maxSources {
				return nil, fmt.Errorf("more than %d addresses", maxSources)
			}
			out = append(out, a)
			if a == last {
				break
			}
		}
	}
	return out, nil
}

// sourcesFor resolves Config.SourceAddrs for a run against serverURLs:
// nil means the kernel chooses the source address.
func sourcesFor(setting string, serverURLs []string) ([]netip.Addr, error) {
	switch setting {
	case SourcesNone:
		return nil, nil
	case SourcesAuto:
		loopback := true
		for _, u := range serverURLs {
			loopback = loopback && loopbackV4(u)
		}
		if runtime.GOOS != "linux" || !loopback {
			// Other systems may have 127.0.0.1 alone, and other
			// destinations need addresses the machine owns.
			return nil, nil
		}
		out := make([]netip.Addr, autoSources)
		a := netip.AddrFrom4([4]byte{127, 0, 0, 1})
		for i := range out {
			out[i] = a
			a = a.Next()
		}
		if !canBind(out[len(out)-1]) {
			// A sandbox whose loopback interface has 127.0.0.1 alone.
			return nil, nil
		}
		return out, nil
	}
	addrs, err := parseSources(setting)
	if err != nil {
		return nil, fmt.Errorf("loadtest: source addresses: %w", err)
	}
	return addrs, nil
}

// loopbackV4 tells whether serverURL's host is an IPv4 loopback address
// or localhost (which a dial from an IPv4 source resolves to 127.0.0.1).
func loopbackV4(serverURL string) bool {
	u, err := url.Parse(serverURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is4() && a.IsLoopback()
}

// canBind tells whether this machine has address a.
func canBind(a netip.Addr) bool {
	c, err := net.ListenPacket("udp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// dialers are the TCP dialers of a worker, one per source address;
// connection i dials with dialers[i%len].
func dialers(sources []netip.Addr) []*net.Dialer {
	if len(sources) == 0 {
		return []*net.Dialer{newDialer(nil)}
	}
	out := make([]*net.Dialer, len(sources))
	for i, a := range sources {
		out[i] = newDialer(&net.TCPAddr{IP: a.AsSlice()})
	}
	return out
}

// newDialer dials from local (nil: the kernel's choice). No TCP
// keep-alive: the server's pings keep a benchmark connection alive, and
// the setsockopt calls per connection would count against the load
// tool's CPU.
func newDialer(local *net.TCPAddr) *net.Dialer {
	d := &net.Dialer{Timeout: setupTimeout, KeepAlive: -1}
	if local != nil {
		d.LocalAddr = local
		d.Control = bindAddressOnly
	}
	return d
}
