package loadtest

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
)

func TestParseSources(t *testing.T) {
	tests := []struct {
		in      string
		want    string // the addresses, space-separated
		wantErr string
	}{
		{"10.0.0.1", "10.0.0.1", ""},
		{"10.0.0.1, 10.0.0.7", "10.0.0.1 10.0.0.7", ""},
		{"10.0.0.254-10.0.1.1", "10.0.0.254 10.0.0.255 10.0.1.0 10.0.1.1", ""},
		{"fd00::1-fd00::3,127.0.0.2", "fd00::1 fd00::2 fd00::3 127.0.0.2", ""},
		{"10.0.0.5-10.0.0.5", "10.0.0.5", ""},
		{"", "", "ParseAddr"},
		{"10.0.0.300", "", "ParseAddr"},
		{"10.0.0.2-10.0.0.1", "", "lower to a higher"},
		{"10.0.0.1-fd00::1", "", "one family"},
		{"10.0.0.1-", "", "ParseAddr"},
		{"10.0.0.0-10.0.255.255", "", "more than 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSources(tt.in)
			if checkErr(t, err, tt.wantErr) {
				return
			}
			if s := joinAddrs(got); s != tt.want {
				t.Fatalf("got %s, want %s", s, tt.want)
			}
		})
	}
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}

func TestSourcesFor(t *testing.T) {
	auto := ""
	if runtime.GOOS == "linux" {
		auto = "127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7 127.0.0.8 " +
			"127.0.0.9 127.0.0.10 127.0.0.11 127.0.0.12 127.0.0.13 127.0.0.14 127.0.0.15 127.0.0.16"
	}
	tests := []struct {
		setting, url, want string
	}{
		{SourcesAuto, "ws://127.0.0.1:8000/connection/websocket", auto},
		{SourcesAuto, "ws://127.3.2.1:8000/connection/websocket", auto},
		{SourcesAuto, "ws://localhost:8000/connection/websocket", auto},
		{SourcesAuto, "ws://[::1]:8000/connection/websocket", ""},
		{SourcesAuto, "wss://example.com/connection/websocket", ""},
		{SourcesAuto, "ws://10.1.2.3:8000/connection/websocket", ""},
		{SourcesAuto, "ws://127.0.0.1:8000/connection/websocket,ws://127.0.0.1:8001/connection/websocket", auto},
		{SourcesAuto, "ws://127.0.0.1:8000/connection/websocket,ws://10.1.2.3:8001/connection/websocket", ""},
		{SourcesNone, "ws://127.0.0.1:8000/connection/websocket", ""},
		{"10.9.0.1-10.9.0.2", "ws://127.0.0.1:8000/connection/websocket", "10.9.0.1 10.9.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.setting+" "+tt.url, func(t *testing.T) {
			got, err := sourcesFor(tt.setting, strings.Split(tt.url, ","))
			if err != nil {
				t.Fatal(err)
			}
			if s := joinAddrs(got); s != tt.want {
				t.Fatalf("got %q, want %q", s, tt.want)
			}
		})
	}
}

// TestCanBind: the automatic source addresses are checked against the
// machine's own, so that a system whose loopback interface has only
// 127.0.0.1 falls back to the kernel's choice.
func TestCanBind(t *testing.T) {
	if !canBind(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("cannot bind 127.0.0.1")
	}
	// 192.0.2.0/24 is for documentation; no machine owns it.
	if canBind(netip.MustParseAddr("192.0.2.1")) {
		t.Fatal("bound 192.0.2.1, an address this machine does not have")
	}
}

// TestSourceAddrs: connections come from the given addresses in turn,
// from child processes too. Linux routes all of 127.0.0.0/8 to the
// loopback interface; other systems may own 127.0.0.1 alone.
func TestSourceAddrs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs 127.0.0.2-127.0.0.4 on the loopback interface")
	}
	for _, procs := range []int{0, 2} {
		t.Run(fmt.Sprintf("procs %d", procs), func(t *testing.T) {
			srv := startServer(t)
			cfg := srv.config()
			cfg.Conns = 12
			cfg.Procs = procs
			cfg.WorkerCommand = workerCommand(t)
			cfg.SourceAddrs = "127.0.0.2-127.0.0.4"
			res, err := Run(context.Background(), ScenarioConnect, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOpened(t, res, cfg.Conns)
			if res.Sources != 3 {
				t.Fatalf("summary says %d source addresses, want 3", res.Sources)
			}
			got := srv.peers.counts()
			want := map[string]int{"127.0.0.2": 4, "127.0.0.3": 4, "127.0.0.4": 4}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("connections per source address %v, want %v", got, want)
			}
		})
	}
}
