package loadtest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// Scenario names, as given on the command line.
const (
	ScenarioIdle     = "idle"
	ScenarioFanout   = "fanout"
	ScenarioChannels = "channels"
	ScenarioConnect  = "connect"
	ScenarioChurn    = "churn"
)

// Scenarios lists every scenario Run knows.
var Scenarios = []string{ScenarioIdle, ScenarioFanout, ScenarioChannels, ScenarioConnect, ScenarioChurn}

// maxConnsPerProc is how many connections one process holds before the
// work is split over child processes: the open-files limit of the test
// machines is 20,000 per process.
const maxConnsPerProc = 10000

// Config describes one run. Zero values take the defaults noted.
type Config struct {
	// URL is the WebSocket endpoint, ws://host:port/connection/websocket,
	// or several, one per node of a cluster, separated by commas: every
	// scenario spreads its connections over them in turn (connection i to
	// node i mod N), so that one channel's subscribers are on every node.
	URL string
	// API is the base of the server HTTP API, http://host:port/api; the
	// method name is appended. Required by fanout and channels. Several,
	// separated by commas, are used in turn by the publishers (publisher
	// i through API i mod N), each keeping to its own.
	API string
	// APIKey goes into the X-API-Key header of API requests.
	APIKey string
	// Token, when set, is the connection token of every connection.
	Token string
	// HMACSecret, when Token is empty, signs an HS256 token per
	// connection for user bench-N. With neither, connections are
	// anonymous.
	HMACSecret string
	// Protocol is the wire format (JSON when zero).
	Protocol protocol.Type
	// Compression makes every connection offer permessage-deflate as
	// browsers do ("permessage-deflate; client_max_window_bits") and
	// inflate what the server compresses; the result says how many
	// connections negotiated it and what it saved on the wire.
	Compression bool

	// Conns is the number of connections (subscribers). Zero: 100.
	Conns int
	// Subs is the number of subscriptions per connection in idle and
	// connect. Zero: 1 in idle, none in connect.
	Subs int
	// Channels is the number of distinct channels idle's subscriptions
	// spread over, and churn's connections pick from. Zero: 100.
	Channels int
	// Channel prefixes every channel name. Zero: "bench".
	Channel string
	// Pattern makes fanout's subscribers subscribe to a pattern,
	// <Channel>-fanout.*, and its publishers publish into
	// <Channel>-fanout.p, which it matches: Channel must then be in a
	// namespace with wildcard subscriptions ("wild:bench").
	Pattern bool

	// Users is the number of users churn's connections are made for,
	// bench-0 to bench-(Users-1): connection slot i is always user
	// i%Users, so that with fewer users than connections several are
	// the same user's. Churn only; zero: Conns.
	Users int
	// Hold is how long a churn connection stays on average: each stays
	// a time drawn uniformly from [Hold/2, 3·Hold/2] after its
	// subscribe, then leaves and another takes its place. Churn only;
	// zero: 1s.
	Hold time.Duration
	// Unsubscribe makes a churn connection unsubscribe before it
	// disconnects; without it, it disconnects with its subscription, as
	// a closed page does. Churn only.
	Unsubscribe bool

	// Duration is how long idle holds, fanout and channels publish and
	// churn churns, and the upper bound of connect. Zero: 10s (connect:
	// 60s).
	Duration time.Duration
	// Rate is publications (broadcasts in channels, connection attempts
	// in connect and churn) per second over all publishers or processes.
	// Zero: as fast as possible (churn: as fast as its connections
	// leave).
	Rate float64
	// Batch, above 1, sends publications in API batch requests of Batch
	// publishes each (fanout only).
	Batch int
	// Size is the size of each publication's data in bytes (at least 64).
	// Zero: 128.
	Size int
	// Payload is what fills a publication's data up to Size: PayloadPad
	// (zero) or PayloadJSON.
	Payload string
	// Seed picks the content of PayloadJSON documents; runs with the same
	// seed publish the same documents (but for the send time).
	Seed uint64
	// Publishers is the number of concurrent API publishers. Zero: 1.
	Publishers int
	// Concurrency bounds connection attempts in flight per process.
	// Zero: 64.
	Concurrency int
	// SourceAddrs are the local addresses connections are made from, in
	// turn: a comma-separated list of IP addresses and ranges
	// (10.0.0.10-10.0.0.20) the machine owns. SourcesAuto (empty): on
	// Linux, 127.0.0.1 to 127.0.0.16 for a server on an IPv4 loopback
	// address when the machine can bind them, else the kernel's choice.
	// SourcesNone: the kernel's choice.
	SourceAddrs string
	// sources is SourceAddrs resolved, once, by withDefaults (resolving
	// the automatic setting binds a socket to check an address).
	sources []netip.Addr
	// urls is URL split into its endpoints by withDefaults, apis API.
	urls []string
	apis []string

	// PIDs, when set, are the server processes whose memory and CPU time
	// are read from /proc: one per URL, in the same order, then any
	// others the run loads (a node that only serves API). Several are
	// summed (the CPU per delivery or per connect is then all of theirs)
	// and reported each as well.
	PIDs []int
	// Reconnect makes a connection whose server goes away (idle, fanout,
	// channels) connect again to the next URL, with a growing, jittered
	// wait between attempts as the SDKs do, and subscribe again: the
	// result says how many dropped, how long each took to be back and
	// how many were not by the end. Once every connection is open a line
	// "ready: …" goes to Progress, for a script to take a node down.
	Reconnect bool
	// Procs is the number of child processes that hold the connections.
	// Zero: one per 10,000 connections, none below that (connections are
	// held in this process).
	Procs int
	// WorkerCommand starts a child process that runs RunWorker on its
	// standard input and output (the program's own path and a hidden
	// flag). Required when Procs ends up above zero.
	WorkerCommand []string

	// Progress receives a line a second while the run goes on; nil: none.
	Progress io.Writer
	// Log is for what goes wrong on the way (child processes' errors);
	// nil: discard.
	Log *slog.Logger
}

// withDefaults fills zero fields and checks the rest, naming the field
// at fault.
func (c Config) withDefaults(scenario string) (Config, error) {
	known := false
	for _, s := range Scenarios {
		known = known || s == scenario
	}
	if !known {
		return c, fmt.Errorf("loadtest: unknown scenario %q", scenario)
	}
	urls, err := splitURLs(c.URL)
	if err != nil {
		return c, fmt.Errorf("loadtest: url: %w", err)
	}
	c.urls = urls
	if len(c.PIDs) > 0 && len(c.PIDs) < len(urls) {
		return c, fmt.Errorf("loadtest: pid: %d process ids for %d URLs: give one per URL, in the same order (then any others)", len(c.PIDs), len(urls))
	}
	for _, pid := range c.PIDs {
		if pid <= 0 {
			return c, fmt.Errorf("loadtest: pid: %d is not a process id", pid)
		}
	}
	if scenario == ScenarioFanout || scenario == ScenarioChannels {
		apis, err := splitList(c.API, "http", "https")
		if err != nil {
			return c, fmt.Errorf("loadtest: api: %w", err)
		}
		c.apis = apis
	}
	if c.Reconnect && scenario != ScenarioIdle && scenario != ScenarioFanout && scenario != ScenarioChannels {
		return c, errors.New("loadtest: reconnect: only idle, fanout and channels hold their connections")
	}
	if c.Protocol != protocol.TypeJSON && c.Protocol != protocol.TypeProtobuf {
		return c, fmt.Errorf("loadtest: protocol: %w", protocol.ErrUnknownType)
	}
	if c.Conns < 0 || c.Subs < 0 || c.Channels < 0 || c.Batch < 0 || c.Size < 0 || c.Users < 0 ||
		c.Publishers < 0 || c.Concurrency < 0 || c.Procs < 0 || c.Rate < 0 || c.Duration < 0 || c.Hold < 0 {
		return c, errors.New("loadtest: negative count, rate or duration")
	}
	setDefault(&c.Conns, 100)
	if scenario == ScenarioIdle {
		setDefault(&c.Subs, 1)
	}
	if err := c.churnDefaults(scenario); err != nil {
		return c, err
	}
	setDefault(&c.Channels, 100)
	setDefault(&c.Size, 128)
	c.Size = max(c.Size, minPayloadSize)
	setDefault(&c.Publishers, 1)
	switch c.Payload {
	case "":
		c.Payload = PayloadPad
	case PayloadPad, PayloadJSON:
	default:
		return c, fmt.Errorf("loadtest: payload %q: want %s or %s", c.Payload, PayloadPad, PayloadJSON)
	}
	setDefault(&c.Concurrency, 64)
	setDefault(&c.Batch, 1)
	if c.Batch > 1 && scenario != ScenarioFanout {
		return c, errors.New("loadtest: batch: only fanout publishes in batches")
	}
	if c.Publishers > 1<<10 {
		return c, errors.New("loadtest: publishers: at most 1024")
	}
	if c.Pattern && scenario != ScenarioFanout {
		return c, errors.New("loadtest: pattern: only fanout subscribes to a pattern")
	}
	if c.Channel == "" {
		c.Channel = "bench"
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
		if scenario == ScenarioConnect {
			c.Duration = time.Minute
		}
	}
	sources, err := sourcesFor(c.SourceAddrs, urls)
	if err != nil {
		return c, err
	}
	c.sources = sources
	if c.Procs == 0 && c.Conns > maxConnsPerProc {
		c.Procs = (c.Conns + maxConnsPerProc - 1) / maxConnsPerProc
	}
	c.Procs = min(c.Procs, c.Conns)
	if c.Procs > 0 && len(c.WorkerCommand) == 0 {
		return c, errors.New("loadtest: procs: no worker command to start child processes with")
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// churnDefaults fills and checks what only churn uses.
func (c *Config) churnDefaults(scenario string) error {
	if scenario != ScenarioChurn {
		if c.Users != 0 || c.Hold != 0 || c.Unsubscribe {
			return errors.New("loadtest: users, hold and unsubscribe: only churn has them")
		}
		return nil
	}
	if c.Subs > 0 {
		return errors.New("loadtest: subs: churn subscribes each connection to one channel")
	}
	setDefault(&c.Users, c.Conns)
	if c.Hold == 0 {
		c.Hold = time.Second
	}
	if c.Hold < time.Millisecond {
		return errors.New("loadtest: hold: at least 1ms")
	}
	return nil
}

func setDefault(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

// splitURLs reads one WebSocket URL or several separated by commas.
func splitURLs(s string) ([]string, error) { return splitList(s, "ws", "wss") }

// splitList reads one URL or several separated by commas, each with one
// of schemes.
func splitList(s string, schemes ...string) ([]string, error) {
	if s == "" {
		return nil, errors.New("missing")
	}
	var out []string
	for u := range strings.SplitSeq(s, ",") {
		u = strings.TrimSpace(u)
		if err := checkURL(u, schemes...); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func checkURL(s string, schemes ...string) error {
	if s == "" {
		return errors.New("missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	for _, sc := range schemes {
		if u.Scheme == sc && u.Host != "" {
			return nil
		}
	}
	return fmt.Errorf("%q is not a %s:// URL", s, schemes[0])
}
