package loadtest

import (
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

func TestConfigDefaults(t *testing.T) {
	base := Config{URL: "ws://127.0.0.1:8000/connection/websocket", API: "http://127.0.0.1:8000/api"}
	tests := []struct {
		name     string
		scenario string
		change   func(*Config)
		check    func(*testing.T, Config)
		wantErr  string
	}{
		{"idle defaults", ScenarioIdle, nil, func(t *testing.T, c Config) {
			if c.Conns != 100 || c.Subs != 1 || c.Channels != 100 || c.Duration != 10*time.Second || c.Procs != 0 || c.Log == nil {
				t.Fatalf("%+v", c)
			}
		}, ""},
		{"connect defaults", ScenarioConnect, nil, func(t *testing.T, c Config) {
			if c.Subs != 0 || c.Duration != time.Minute || c.Concurrency != 64 {
				t.Fatalf("%+v", c)
			}
		}, ""},
		{"churn defaults", ScenarioChurn, func(c *Config) { c.Conns = 30 }, func(t *testing.T, c Config) {
			if c.Users != 30 || c.Hold != time.Second || c.Channels != 100 || c.Duration != 10*time.Second || c.Subs != 0 {
				t.Fatalf("%+v", c)
			}
		}, ""},
		{"several urls", ScenarioChurn, func(c *Config) {
			c.URL = "ws://127.0.0.1:8001/connection/websocket, ws://127.0.0.1:8002/connection/websocket"
			c.PIDs = []int{10, 11}
		}, func(t *testing.T, c Config) {
			if strings.Join(c.urls, " ") != "ws://127.0.0.1:8001/connection/websocket ws://127.0.0.1:8002/connection/websocket" {
				t.Fatalf("urls %q", c.urls)
			}
		}, ""},
		{"several urls in idle", ScenarioIdle, func(c *Config) { c.URL += "," + c.URL }, nil, ""},
		{"several urls and apis in fanout", ScenarioFanout, func(c *Config) {
			c.URL += "," + c.URL
			c.API = "http://127.0.0.1:8001/api, https://127.0.0.1:8002/api"
		}, func(t *testing.T, c Config) {
			if len(c.urls) != 2 || strings.Join(c.apis, " ") != "http://127.0.0.1:8001/api https://127.0.0.1:8002/api" {
				t.Fatalf("urls %q, apis %q", c.urls, c.apis)
			}
		}, ""},
		{"several urls in channels", ScenarioChannels, func(c *Config) { c.URL += "," + c.URL }, nil, ""},
		{"bad api in a list", ScenarioChannels, func(c *Config) { c.API += ",ws://127.0.0.1:8001/api" }, nil, "api: \"ws://127.0.0.1:8001/api\" is not a http:// URL"},
		{"empty url in a list", ScenarioChurn, func(c *Config) { c.URL += "," }, nil, "url: missing"},
		{"pids for fewer urls", ScenarioChurn, func(c *Config) { c.URL += "," + c.URL; c.PIDs = []int{10} }, nil, "1 process ids for 2 URLs"},
		{"pids past the urls", ScenarioFanout, func(c *Config) { c.PIDs = []int{10, 11} }, nil, ""},
		{"reconnect in idle", ScenarioIdle, func(c *Config) { c.Reconnect = true }, nil, ""},
		{"reconnect in connect", ScenarioConnect, func(c *Config) { c.Reconnect = true }, nil, "reconnect: only idle, fanout and channels"},
		{"reconnect in churn", ScenarioChurn, func(c *Config) { c.Reconnect = true }, nil, "reconnect: only"},
		{"bad pid", ScenarioIdle, func(c *Config) { c.PIDs = []int{0} }, nil, "not a process id"},
		{"users outside churn", ScenarioIdle, func(c *Config) { c.Users = 3 }, nil, "only churn"},
		{"unsubscribe outside churn", ScenarioConnect, func(c *Config) { c.Unsubscribe = true }, nil, "only churn"},
		{"subs in churn", ScenarioChurn, func(c *Config) { c.Subs = 2 }, nil, "one channel"},
		{"short hold", ScenarioChurn, func(c *Config) { c.Hold = time.Microsecond }, nil, "at least 1ms"},
		{"negative hold", ScenarioChurn, func(c *Config) { c.Hold = -time.Second }, nil, "negative"},
		{"small size raised", ScenarioFanout, func(c *Config) { c.Size = 3 }, func(t *testing.T, c Config) {
			if c.Size != minPayloadSize {
				t.Fatalf("size %d", c.Size)
			}
		}, ""},
		{"procs past the per-process share", ScenarioIdle, func(c *Config) { c.Conns = 15000; c.WorkerCommand = []string{"x"} }, func(t *testing.T, c Config) {
			if c.Procs != 2 {
				t.Fatalf("procs %d, want 2", c.Procs)
			}
		}, ""},
		{"procs at most conns", ScenarioIdle, func(c *Config) { c.Conns = 3; c.Procs = 8; c.WorkerCommand = []string{"x"} }, func(t *testing.T, c Config) {
			if c.Procs != 3 {
				t.Fatalf("procs %d, want 3", c.Procs)
			}
		}, ""},
		{"unknown scenario", "storm", nil, nil, "unknown scenario"},
		{"no url", ScenarioIdle, func(c *Config) { c.URL = "" }, nil, "url: missing"},
		{"http url", ScenarioIdle, func(c *Config) { c.URL = "http://127.0.0.1/" }, nil, "not a ws://"},
		{"no api for fanout", ScenarioFanout, func(c *Config) { c.API = "" }, nil, "api: missing"},
		{"no api needed for idle", ScenarioIdle, func(c *Config) { c.API = "" }, nil, ""},
		{"bad protocol", ScenarioIdle, func(c *Config) { c.Protocol = 7 }, nil, "unknown type"},
		{"negative", ScenarioIdle, func(c *Config) { c.Conns = -1 }, nil, "negative"},
		{"batch outside fanout", ScenarioChannels, func(c *Config) { c.Batch = 5 }, nil, "batch"},
		{"pattern outside fanout", ScenarioIdle, func(c *Config) { c.Pattern = true }, nil, "pattern"},
		{"procs without a command", ScenarioIdle, func(c *Config) { c.Procs = 2 }, nil, "worker command"},
		{"too many publishers", ScenarioFanout, func(c *Config) { c.Publishers = 5000 }, nil, "publishers"},
		{"bad source addresses", ScenarioConnect, func(c *Config) { c.SourceAddrs = "10.0.0.1-x" }, nil, "source addresses"},
		{"protobuf", ScenarioIdle, func(c *Config) { c.Protocol = protocol.TypeProtobuf }, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			if tt.change != nil {
				tt.change(&c)
			}
			got, err := c.withDefaults(tt.scenario)
			if checkErr(t, err, tt.wantErr) {
				return
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func TestChannelsFor(t *testing.T) {
	tests := []struct {
		spec workerSpec
		i    int
		want string
	}{
		{workerSpec{Scenario: ScenarioFanout, Channel: "b"}, 5, "b-fanout"},
		{workerSpec{Scenario: ScenarioFanout, Channel: "w:b", Pattern: true}, 5, "w:b-fanout.*"},
		{workerSpec{Scenario: ScenarioChannels, Channel: "b"}, 5, "b-ch-5"},
		{workerSpec{Scenario: ScenarioIdle, Channel: "b", Subs: 3, Channels: 4}, 1, "b-idle-3,b-idle-0,b-idle-1"},
		{workerSpec{Scenario: ScenarioConnect, Channel: "b"}, 1, ""},
		{workerSpec{Scenario: ScenarioChurn, Channel: "chat:"}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.spec.Scenario, func(t *testing.T) {
			if got := strings.Join(tt.spec.channelsFor(tt.i), ","); got != tt.want {
				t.Fatalf("channelsFor(%d) = %q, want %q", tt.i, got, tt.want)
			}
		})
	}
}

func TestChurnNames(t *testing.T) {
	if got := churnChannel("chat:room", 7); got != "chat:room-churn-7" {
		t.Fatalf("churnChannel = %q", got)
	}
	// Slot i is always user i%Users, whichever process holds it.
	s := workerSpec{Scenario: ScenarioChurn, HMACSecret: "s", Users: 3, TokenTTL: time.Hour}
	a, errA := s.tokenFor(7, time.Unix(1e9, 0))
	b, errB := s.tokenFor(1, time.Unix(1e9, 0))
	c, errC := s.tokenFor(2, time.Unix(1e9, 0))
	if errA != nil || errB != nil || errC != nil || a != b || a == c {
		t.Fatalf("tokens of slots 7, 1 and 2: %v %v %v; want 7 and 1 the same user's", errA, errB, errC)
	}
}

func TestErrorSamples(t *testing.T) {
	var e errorSamples
	for i := range maxDistinctErrors + 5 {
		e.add(strings.Repeat("e", i+1))
	}
	e.addN("e", 10)
	list := e.list()
	if len(list) != maxDistinctErrors+1 || list[0] != (ErrorCount{"e", 11}) || list[len(list)-1].Count != 5 {
		t.Fatalf("list %v", list)
	}
	var m errorSamples
	m.merge(list[:2])
	if got := m.list(); len(got) != 2 || got[0].Count != 11 {
		t.Fatalf("merged %v", got)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct{ got, want string }{
		{count(0), "0"},
		{count(999), "999"},
		{count(1000), "1,000"},
		{count(int64(-1234567)), "-1,234,567"},
		{count(uint64(15000)), "15,000"},
		{micros(850), "850µs"},
		{micros(1500), "1.50ms"},
		{micros(2500000), "2.50s"},
		{bytesIEC(512), "512 B"},
		{bytesIEC(16.3 * 1024), "16.3 KiB"},
		{bytesIEC(-3 << 20), "-3.0 MiB"},
		{bytesIEC(3 << 30), "3.00 GiB"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
