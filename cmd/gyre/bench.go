package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/gyrehq/gyre/loadtest"
	"github.com/gyrehq/gyre/protocol"
)

// workerFlag starts a child process of a bench run (see loadtest.RunWorker);
// it is not in the usage.
const workerFlag = "--worker"

const benchUsage = `Usage: gyre bench SCENARIO --url ws://HOST:PORT/connection/websocket[,ws://…] [flags]

Every scenario spreads its connections over the nodes of --url in turn
(connection i to node i mod N); with --pid, one per --url, the servers'
memory and CPU are summed (CPU per delivery or per connect is all of
theirs) and shown per node.

Scenarios:
  idle      open --conns connections with --subs subscriptions each and hold them
            for --duration; with --pid: server memory per connection and idle CPU;
            with --reconnect: how long the connections of a node taken down
            take to be back on the others
  fanout    --conns subscribers of one channel; publish through --api for
            --duration (--rate, --batch, --size, --publishers); deliveries/s,
            latency, losses, reordering, server CPU per delivery, bytes on
            the wire (with --compression: compressed, and the ratio)
  channels  a channel per connection; broadcast to all of them through --api
  connect   open --conns connections as fast as possible (or at --rate/s)
  churn     keep --conns connections coming and going over the nodes (--url
            several times) for --duration: each connects as one of --users,
            subscribes to one of --channels, stays about --hold and leaves;
            connects, subscribes and disconnects per second, their latency
            and failures, server CPU per node (--pid, one per --url)

Flags:
`

// runBench runs a load scenario against any Centrifugo-compatible server.
func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == workerFlag {
		// The parent decides when a child's connections close; an
		// interrupt from the terminal reaches the parent too.
		signal.Ignore(os.Interrupt, syscall.SIGTERM)
		return loadtest.RunWorker(context.Background(), os.Stdin, stdout)
	}
	scenario, cfg, out, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	if scenario == "" {
		return nil // usage was asked for
	}
	if out.cpuProfile != "" {
		stopProfile, err := startCPUProfile(out.cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer stopProfile()
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	cfg.WorkerCommand = []string{exe, "bench", workerFlag}
	cfg.Progress = stderr
	cfg.Log = slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, runErr := loadtest.Run(ctx, scenario, cfg)
	if res != nil {
		if err := writeBenchResult(stdout, res, out.json); err != nil {
			return err
		}
	}
	if runErr != nil {
		return fmt.Errorf("bench: %w", runErr)
	}
	return nil
}

func writeBenchResult(w io.Writer, res *loadtest.Result, asJSON bool) error {
	if !asJSON {
		return res.WriteTable(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// benchOutput is what a run writes besides progress.
type benchOutput struct {
	json       bool   // the summary as JSON
	cpuProfile string // a CPU profile of this process, when set
}

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// parseBench reads the scenario (before or after the flags) and the
// flags; an empty scenario means the usage was printed.
func parseBench(args []string, stderr io.Writer) (string, loadtest.Config, benchOutput, error) {
	var cfg loadtest.Config
	var out benchOutput
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	var urls stringList
	fs.Var(&urls, "url", "WebSocket endpoint `URL` (ws://host:port/connection/websocket); several nodes' with commas or the flag repeated (connections spread over them in turn)")
	var apis stringList
	fs.Var(&apis, "api", "server HTTP API base `URL` (http://host:port/api); several with commas or the flag repeated (publisher i publishes through API i mod N)")
	fs.StringVar(&cfg.APIKey, "api-key", "", "API `key` (X-API-Key)")
	fs.StringVar(&cfg.Token, "token", "", "connection `token` for every connection")
	fs.StringVar(&cfg.HMACSecret, "hmac-secret", "", "sign an HS256 token per connection (users bench-N) with this `secret`")
	proto := fs.String("protocol", "json", "wire format: json or protobuf")
	fs.BoolVar(&cfg.Compression, "compression", false, "offer permessage-deflate (as browsers do) and inflate what the server compresses; the summary says how many connections negotiated it and the bytes on the wire and inflated")
	fs.IntVar(&cfg.Conns, "conns", 0, "`N` connections (default 100)")
	fs.IntVar(&cfg.Conns, "n", 0, "short for --conns")
	fs.IntVar(&cfg.Subs, "subs", 0, "subscriptions per connection in idle and connect (default 1 in idle)")
	fs.IntVar(&cfg.Channels, "channels", 0, "distinct channels idle subscriptions spread over, or churn picks from (default 100)")
	fs.StringVar(&cfg.Channel, "channel", "", "channel name `prefix` (default bench)")
	fs.BoolVar(&cfg.Pattern, "pattern", false, "fanout: subscribe to the pattern <prefix>-fanout.* and publish into <prefix>-fanout.p (prefix in a namespace with allow_wildcard_subscriptions)")
	fs.IntVar(&cfg.Users, "users", 0, "churn: `N` users, bench-0 to bench-(N-1); connection slot i is always user i%N (default --conns)")
	fs.DurationVar(&cfg.Hold, "hold", 0, "churn: how long a connection stays on average, each uniformly in [hold/2, 3·hold/2] (default 1s)")
	fs.BoolVar(&cfg.Unsubscribe, "unsubscribe", false, "churn: unsubscribe before disconnecting (default: disconnect with the subscription, as a closed page does)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "hold, publish or churn for this long; connect gives up after it (default 10s, connect 1m)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "publications (channels: broadcasts; connect and churn: connections) per second; 0: as fast as possible (churn: as fast as connections leave)")
	fs.IntVar(&cfg.Batch, "batch", 0, "fanout: `B` publishes per API batch request")
	fs.IntVar(&cfg.Size, "size", 0, "publication data size in `bytes` (default 128, at least 64)")
	fs.StringVar(&cfg.Payload, "payload", loadtest.PayloadPad, "publication data: pad (one letter repeated) or json (a market feed's events, realistic for compression)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "`seed` of the json payload: the same seed publishes the same documents")
	fs.IntVar(&cfg.Publishers, "publishers", 0, "concurrent API publishers (default 1)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "connection attempts in flight per process (default 64)")
	fs.StringVar(&cfg.SourceAddrs, "source-addrs", "", "local `addresses` to connect from in turn: IPs and ranges (10.0.0.10-10.0.0.20), comma-separated, or none for the kernel's choice (default on Linux for a 127.x server: 127.0.0.1-127.0.0.16)")
	fs.Var((*pidList)(&cfg.PIDs), "pid", "server process `id` to read memory and CPU of from /proc; one per --url in the same order, then any others (a node serving only --api), comma-separated or the flag repeated; several are summed and shown each")
	fs.BoolVar(&cfg.Reconnect, "reconnect", false, "idle, fanout, channels: a connection whose server goes away connects to the next --url and subscribes again, after waits of 100ms doubling to 5s (each random in [d/2, d]); prints \"ready: …\" on stderr once all are open, and reports how many dropped, how long each took to be back and how many were not")
	fs.IntVar(&cfg.Procs, "procs", 0, "child processes holding the connections (default: one per 10,000, none below)")
	fs.BoolVar(&out.json, "json", false, "print the summary as JSON")
	fs.StringVar(&out.cpuProfile, "cpuprofile", "", "write a CPU profile of this process to `file` (child processes, used above 10,000 connections or with --procs, are not in it)")
	var scenario string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		scenario, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", cfg, out, nil
		}
		return "", cfg, out, fmt.Errorf("bench: %w", err)
	}
	if scenario == "" && fs.NArg() > 0 {
		scenario = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", cfg, out, fmt.Errorf("bench: %w", err)
		}
	}
	if fs.NArg() > 0 {
		return "", cfg, out, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	if scenario == "" {
		fs.Usage()
		return "", cfg, out, errors.New("bench: no scenario (idle, fanout, channels, connect or churn)")
	}
	cfg.URL = strings.Join(urls, ",")
	cfg.API = strings.Join(apis, ",")
	switch *proto {
	case "json":
		cfg.Protocol = protocol.TypeJSON
	case "protobuf":
		cfg.Protocol = protocol.TypeProtobuf
	default:
		return "", cfg, out, fmt.Errorf("bench: --protocol %q: want json or protobuf", *proto)
	}
	return scenario, cfg, out, nil
}

// stringList collects a flag given several times.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// pidList collects process ids, comma-separated or the flag repeated.
type pidList []int

func (l *pidList) String() string {
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

func (l *pidList) Set(s string) error {
	for item := range strings.SplitSeq(s, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(item))
		if err != nil || pid <= 0 {
			return fmt.Errorf("%q is not a process id", item)
		}
		*l = append(*l, pid)
	}
	return nil
}
