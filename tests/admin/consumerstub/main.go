// Command consumerstub serves the admin interface of a node that runs two
// consumers, for the browser test of the Status page's Consumers table
// (tests/admin/test/consumers.test.js).
//
// The node, the API executor, the consumers' dispatchers and consume.Set
// are Gyre's own; only the queues are stand-ins: "feed" reads the messages
// POSTed to /produce (one message a line, each {"method": ..., "payload":
// ...} as a queue would hold it), and "outbox" has a source that never
// answers, which it keeps trying as a real consumer rides out an outage.
// The server binary builds its consumers from the config only, and no
// source the test can start here has a consumer built yet; once one has
// (redis_stream, on the Redis the admin tests start), the browser test
// should run gyre itself with it instead of this program.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/consume"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8000", "address to listen on")
	name := flag.String("name", "consumer-stub-node", "node name")
	password := flag.String("password", "", "admin password")
	secret := flag.String("secret", "", "admin secret")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*addr, *name, *password, *secret, log); err != nil {
		log.Error("consumerstub", "error", err)
		os.Exit(1)
	}
}

func run(addr, name, password, secret string, log *slog.Logger) error {
	open := gyre.ChannelOptions{AllowSubscribeForClient: true, HistorySize: 10, HistoryTTL: time.Minute}
	node, err := gyre.NewNode(gyre.Config{Name: name, Version: "stub", Logger: log, Channels: gyre.ChannelConfig{WithoutNamespace: open}})
	if err != nil {
		return err
	}
	if err := node.Run(); err != nil {
		return err
	}
	exec := api.NewExecutor(node, api.Config{Logger: log})

	set := &consume.Set{}
	feed := &queue{msgs: make(chan consume.Message, 1000)}
	feed.d = consume.NewDispatcher("feed", "redis_stream", exec, log)
	set.Add(feed.d, feed)
	outbox := &unreachable{d: consume.NewDispatcher("outbox", "postgresql", exec, log)}
	set.Add(outbox.d, outbox)

	h, err := admin.New(node, exec, admin.Config{
		Password: password, Secret: secret, Insecure: password == "",
		Version: "stub", Logger: log, Consumers: set.Snapshots,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("POST /produce", feed.produce)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	set.Start()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = set.Stop(ctx)
		_ = srv.Shutdown(ctx)
		_ = node.Shutdown(ctx)
	}()
	log.Info("listening", "address", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// queue is the "feed" consumer: its source is an in-process queue filled by
// POST /produce, read a batch at a time, its lag what is left in it.
type queue struct {
	d    *consume.Dispatcher
	msgs chan consume.Message
	seq  int
}

func (q *queue) produce(w http.ResponseWriter, r *http.Request) {
	sc := bufio.NewScanner(r.Body)
	n := 0
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		q.msgs <- consume.Message{Payload: append([]byte(nil), sc.Bytes()...)}
		n++
	}
	q.d.SetLag(int64(len(q.msgs)))
	fmt.Fprintf(w, "%d\n", n)
}

func (q *queue) Run(ctx context.Context) error {
	q.d.SourceOK()
	q.d.SetLag(0)
	for {
		var batch []consume.Message
		select {
		case <-ctx.Done():
			return nil
		case m := <-q.msgs:
			batch = append(batch, m)
		}
		for len(batch) < 100 && len(q.msgs) > 0 {
			batch = append(batch, <-q.msgs)
		}
		for i := range batch {
			q.seq++
			batch[i].Position = fmt.Sprintf("entry %d", q.seq)
		}
		q.d.SetLag(int64(len(q.msgs)))
		if _, err := q.d.Dispatch(ctx, batch); err != nil {
			return nil // stopping: what was not done stays unacknowledged
		}
	}
}

// unreachable is the "outbox" consumer: its source never answers.
type unreachable struct{ d *consume.Dispatcher }

func (u *unreachable) Run(ctx context.Context) error {
	u.d.SetLag(-1)
	for attempt := 0; ; attempt++ {
		u.d.SourceFailed("connect", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"))
		if !u.d.Backoff(ctx, attempt) {
			return nil
		}
	}
}
