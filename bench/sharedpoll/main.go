// Command sharedpoll measures shared-poll subscriptions from the outside:
// the backend's load (requests and keys it is polled for) against the
// number of gyre nodes and connections, and what the connections receive.
// It has three roles, each a process of its own:
//
//   - backend: the application's refresh proxy (POST /refresh, the
//     shared_poll_refresh HTTP shape) over --keys versioned values, a
//     fraction (--change) of which gets a new version each --tick; it
//     answers each key asked with a version older than its own, and counts
//     requests, keys asked and values answered, in all, per node (the
//     X-Node header, a static header of the node's proxy) and per key;
//     GET /stats gives the counts.
//   - trackers: --conns WebSocket connections (JSON protocol) spread
//     round-robin over --url, each subscribed to the shared-poll channel
//     and tracking --keys-per-conn keys of a window that overlaps its
//     neighbours'; it counts the values received, checks that each key's
//     versions only grow, and measures the lag from a value's change at
//     the backend to its arrival; GET /stats on --stats gives the counts.
//   - measure: waits until every tracker connection tracks its keys and
//     has a value for each, then reads the backend's and the trackers'
//     counts and the CPU time of the processes of --pid over a window (and
//     first over a window with the backend's changes paused, for the cost
//     of polling alone), and prints the table.
//
// scripts/bench-shared-poll runs the three against gyre nodes on Redis;
// see docs/benchmarks.md, "Shared-poll subscriptions".
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sharedpoll backend|trackers|measure [flags] (sharedpoll ROLE -h for the flags)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch role, args := os.Args[1], os.Args[2:]; role {
	case "backend":
		err = runBackend(ctx, args)
	case "trackers":
		err = runTrackers(ctx, args)
	case "measure":
		err = runMeasure(ctx, args)
	default:
		fmt.Fprintf(os.Stderr, "unknown role %q: backend, trackers or measure\n", role)
		os.Exit(2)
	}
	if err != nil {
		slog.Error("sharedpoll "+os.Args[1], "err", err)
		os.Exit(1)
	}
}
