package jetstream_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/jetstream"
	"github.com/gyrehq/gyre/server/consume/jetstream/jetstreamtest"
)

// The test binary run as a node that dies: childEnv holds "url stream
// durable".
const childEnv = "GYRE_JETSTREAM_TEST_CHILD"

// runChild consumes the durable of childEnv with a broker that is down,
// says "fetched" once the first batch waits for it, and waits to be
// killed.
func runChild() int {
	var url, stream, durable string
	if _, err := fmt.Sscan(os.Getenv(childEnv), &url, &stream, &durable); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	node, err := newChildNode()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	node.rec.down.Store(true)
	node.rec.onDown = func() { fmt.Println("fetched") }
	p := &jetstreamtest.Place{URL: url, Stream: stream, Subject: stream + ".in"}
	c := p.ConsumerWith("child", durable, func(j map[string]any) { j["use_existing_consumer"] = true })
	d := consume.NewDispatcher(c.Name, c.Type, node.exec, nil)
	cons, err := jetstream.New(c.NatsJetStream, nil, d)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if err := cons.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
	}
	return 1
}

// TestKilledBeforeAck: a node dies holding a batch it fetched and did not
// acknowledge (its broker was down); JetStream hands the batch, after
// AckWait, to another node, which runs every message once.
func TestKilledBeforeAck(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.JS.CreateConsumer(ctx, p.Stream, natsjs.ConsumerConfig{
		Durable: "killed", AckPolicy: natsjs.AckExplicitPolicy, AckWait: time.Second,
		MaxAckPending: 50, FilterSubject: p.Subject,
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 120
	p.Produce(t, 0, publishMsgs("killed", 0, n)...)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+strings.Join([]string{p.URL, p.Stream, "killed"}, " "))
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "fetched" {
			t.Fatalf("child said %q", l)
		}
	case <-time.After(time.Minute):
		_ = child.Process.Kill()
		t.Fatal("the child fetched nothing")
	}
	held := consumerInfo(t, p, "killed").NumAckPending
	if held == 0 {
		t.Fatal("the child holds no message")
	}
	_ = child.Process.Kill()
	_ = child.Wait()

	node := newTestNode(t)
	c := p.ConsumerWith("survivor", "killed", func(j map[string]any) { j["use_existing_consumer"] = true })
	node.start(t, c)
	waitFor(t, "every message run", func() bool { return len(node.rec.published("killed")) >= n })
	pubs := node.rec.published("killed")
	seen := map[string]int{}
	inOrder := true
	for i, p := range pubs {
		seen[p.Data]++
		if p.Data != fmt.Sprintf(`{"n":%d}`, i) {
			inOrder = false
		}
	}
	for i := range n {
		if k := fmt.Sprintf(`{"n":%d}`, i); seen[k] != 1 {
			t.Fatalf("%s run %d times, want once", k, seen[k])
		}
	}
	info := consumerInfo(t, p, "killed")
	if info.NumRedelivered == 0 && info.Delivered.Consumer <= n {
		t.Fatalf("consumer info %+v: nothing was delivered again", info)
	}
	t.Logf("the child held %d messages; the survivor ran them in stream order: %v", held, inOrder)
}
