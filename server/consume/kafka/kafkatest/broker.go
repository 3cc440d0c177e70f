// Package kafkatest runs real Kafka brokers for tests and drives them:
// topics with partitions, records produced into a chosen partition. The
// tests of a binary share one broker (GYRE_TEST_KAFKA_BROKERS when set,
// else one started at the first use and killed when the binary exits);
// a test that stops its broker starts one of its own (Start).
//
// Brokers come from scripts/install-kafka (Kafka's jars from Maven
// Central, run with the machine's Java 17+) and are started by
// scripts/start-kafka: KRaft mode, one node, free loopback ports. With
// GYRE_SKIP_KAFKA=1 the tests that need Kafka are skipped where it is not
// installed; otherwise they fail.
//
// Source is the adapter of server/consume/consumetest.
package kafkatest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/testproc"
)

// startTimeout bounds a broker's start, storage formatting included: on
// a machine busy with other tests the JVM takes its time.
const startTimeout = 120 * time.Second

// Require fails t unless a broker can be had: GYRE_TEST_KAFKA_BROKERS is
// set, or Kafka is installed and java runs. With GYRE_SKIP_KAFKA=1 it
// skips t instead.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv("GYRE_TEST_KAFKA_BROKERS") != "" {
		return
	}
	if err := installed(); err != nil {
		if os.Getenv("GYRE_SKIP_KAFKA") == "1" {
			t.Skipf("kafka: %v, and GYRE_SKIP_KAFKA=1", err)
		}
		t.Fatalf("kafka: %v: install it with scripts/install-kafka (Maven and a JDK 17+), point GYRE_TEST_KAFKA_BROKERS at a broker, or set GYRE_SKIP_KAFKA=1 to skip the Kafka tests", err)
	}
}

// RequireLocal is Require for tests that start brokers of their own,
// which GYRE_TEST_KAFKA_BROKERS does not give.
func RequireLocal(t testing.TB) {
	t.Helper()
	if err := installed(); err != nil {
		if os.Getenv("GYRE_SKIP_KAFKA") == "1" {
			t.Skipf("kafka: %v, and GYRE_SKIP_KAFKA=1", err)
		}
		t.Fatalf("kafka: %v: install it with scripts/install-kafka (Maven and a JDK 17+), or set GYRE_SKIP_KAFKA=1 to skip the Kafka tests", err)
	}
}

var installedOnce = sync.OnceValue(findInstalled)

// installed tells why no broker can be started here, nil when one can.
func installed() error { return installedOnce() }

func findInstalled() error {
	script, err := startScript()
	if err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(filepath.Dir(script), "install-kafka"), "--libs").Output()
	if err != nil {
		return fmt.Errorf("scripts/install-kafka --libs: %w", err)
	}
	libs := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(libs, ".complete")); err != nil {
		return fmt.Errorf("Kafka is not installed in %s", libs)
	}
	java := "java"
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java = filepath.Join(home, "bin", "java")
	}
	if _, err := exec.LookPath(java); err != nil {
		return fmt.Errorf("no java: %w", err)
	}
	return nil
}

// startScript is scripts/start-kafka of the source tree this package is
// in, found from its own file or, failing that, from the directory the
// test runs in.
func startScript() (string, error) {
	var dirs []string
	if _, file, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	for _, d := range dirs {
		for ; ; d = filepath.Dir(d) {
			s := filepath.Join(d, "scripts", "start-kafka")
			if _, err := os.Stat(s); err == nil {
				return s, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("scripts/start-kafka not found above the test's directory")
}

// Broker is one Kafka broker process. Kill, Stop and Running are
// testproc.Proc's; Restart starts it again with its data.
type Broker struct {
	// Addr is host:port of the broker's listener.
	Addr string
	// Dir holds its config, log and data.
	Dir string

	*testproc.Proc
}

// Start runs a broker of the test's own, killed when the test ends.
func Start(t testing.TB) *Broker {
	t.Helper()
	RequireLocal(t)
	b, err := StartDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Kill)
	return b
}

// StartDir is Start for callers without a testing.TB (a broker shared by
// a test binary): the broker keeps its files in dir and runs until Kill
// or Stop, or until the process that started it exits.
func StartDir(dir string) (*Broker, error) {
	script, err := startScript()
	if err != nil {
		return nil, err
	}
	b := &Broker{Dir: dir}
	b.Proc = &testproc.Proc{
		Name: script, Args: []string{"--foreground", dir}, Addr: dir, DieWithParent: true,
		Ready: b.ready, Log: b.tailLog,
	}
	if err := b.start(); err != nil {
		return nil, err
	}
	addr, err := os.ReadFile(filepath.Join(dir, "address"))
	if err != nil {
		b.Kill()
		return nil, fmt.Errorf("kafkatest: broker address: %w", err)
	}
	b.Addr = strings.TrimSpace(string(addr))
	return b, nil
}

// Restart starts a stopped or killed broker again, on the same port, with
// the data it had.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
}

func (b *Broker) start() error {
	// ready tells a dead start by the pid the script writes.
	_ = os.Remove(filepath.Join(b.Dir, "kafka.pid"))
	return b.Proc.Start()
}

// ready waits until the broker serves clients, its script or JVM dies,
// or startTimeout passes. It waits itself, rather than answer at once as
// testproc expects, because a busy machine can take longer to start a
// JVM than testproc waits.
func (b *Broker) ready() error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if pid, err := os.ReadFile(filepath.Join(b.Dir, "kafka.pid")); err == nil {
			if !alive(strings.TrimSpace(string(pid))) {
				return errors.New("kafkatest: the broker exited")
			}
			log, _ := os.ReadFile(filepath.Join(b.Dir, "server.log"))
			if bytes.Contains(log, []byte("Kafka Server started")) {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("kafkatest: the broker did not start in time")
}

// alive reports whether the process pid runs.
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	p, err := os.FindProcess(n)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

func (b *Broker) tailLog() string {
	var out []byte
	for _, name := range []string{"format.log", "server.log"} {
		if data, err := os.ReadFile(filepath.Join(b.Dir, name)); err == nil {
			out = append(out, data...)
		}
	}
	if len(out) == 0 {
		return "(no log)"
	}
	if len(out) > 3000 {
		out = out[len(out)-3000:]
	}
	return string(out)
}

// The broker the tests of a binary share.
var shared struct {
	once  sync.Once
	addrs []string
	err   error
}

// Brokers are the seed brokers the tests of the binary share:
// GYRE_TEST_KAFKA_BROKERS (comma-separated host:port) when set, else a
// broker started at the first call, which dies with the test binary.
func Brokers(t testing.TB) []string {
	t.Helper()
	Require(t)
	shared.once.Do(func() {
		if env := os.Getenv("GYRE_TEST_KAFKA_BROKERS"); env != "" {
			for a := range strings.SplitSeq(env, ",") {
				if a = strings.TrimSpace(a); a != "" {
					shared.addrs = append(shared.addrs, a)
				}
			}
			return
		}
		shared.addrs, shared.err = startShared()
	})
	if shared.err != nil {
		t.Fatalf("kafkatest: shared broker: %v", shared.err)
	}
	return shared.addrs
}

// sharedPrefix names the directories of shared brokers; owner in each is
// the pid of the test binary that started it.
const sharedPrefix = "gyre-kafkatest-"

func startShared() ([]string, error) {
	removeStale()
	dir, err := os.MkdirTemp("", sharedPrefix)
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	b, err := StartDir(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return []string{b.Addr}, nil
}

// removeStale removes the directories of shared brokers whose test binary
// is gone (the broker died with it), which nothing else removes.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sharedPrefix+"*"))
	for _, d := range dirs {
		owner, err := os.ReadFile(filepath.Join(d, "owner"))
		if err != nil || alive(strings.TrimSpace(string(owner))) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// FreeAddr is a loopback host:port nobody listens on, for a broker
// address that refuses connections.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
