package otel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestDelivery publishes through the HTTP API of node A, under a
// traceparent of the test's, into a channel that a client of node A and
// one of node B subscribe to, and finds the whole delivery in one trace:
// the API span is the child of the test's span, and each node adds a
// fanout span under it that names the node and counts the one subscriber
// it reached. Both OTLP protocols, with the nodes on Redis and on a NATS
// broker.
func TestDelivery(t *testing.T) {
	requireJaeger(t)
	t.Parallel()
	type cluster struct {
		name  string
		start func(t *testing.T) func(name string) gyreproc.Config
	}
	clusters := []cluster{
		{"redis", func(t *testing.T) func(string) gyreproc.Config {
			r := redistest.Start(t)
			return func(name string) gyreproc.Config {
				return nodeConfig(name).Set("engine.type", "redis").Set("engine.redis", map[string]any{"address": []string{r.Addr}})
			}
		}},
		{"nats", func(t *testing.T) func(string) gyreproc.Config {
			n := natstest.Start(t)
			return func(name string) gyreproc.Config {
				return nodeConfig(name).Set("broker", map[string]any{"enabled": true, "type": "nats", "nats": map[string]any{"url": n.URL}})
			}
		}},
	}
	for _, c := range clusters {
		for _, proto := range []string{"http/protobuf", "grpc"} {
			t.Run(c.name+"/"+proto, func(t *testing.T) {
				t.Parallel()
				cfg := c.start(t)
				checkDelivery(t, proto, cfg)
			})
		}
	}
}

func checkDelivery(t *testing.T, proto string, cfg func(name string) gyreproc.Config) {
	service := serviceName(t)
	a := startNode(t, "A", cfg("A"), toJaeger(proto, service))
	b := startNode(t, "B", cfg("B"), toJaeger(proto, service))
	const channel = "news"
	subs := []struct {
		node *gyreproc.Node
		user string
	}{{a, "alice"}, {b, "bob"}}
	var clients []*wstest.Client
	for _, s := range subs {
		c := connectUser(t, s.node, s.user)
		c.MustSubscribe(channel)
		clients = append(clients, c)
	}

	traceID, parent := newID(16), newID(8)
	publish(t, a, channel, `{"text":"traced"}`, traceparent(traceID, parent))
	// Tracing changes nothing for the subscribers.
	for _, c := range clients {
		c.WaitPubs(channel, 1)
	}

	waitTrace(t, traceID, "the API span and a fanout span of each node", func(spans []span) string {
		api, missing := findAPISpan(spans, "publish", parent)
		if api == nil {
			return missing
		}
		if api.Attrs["gyre.channel"] != channel {
			return fmt.Sprintf("the API span has gyre.channel %q, want %q", api.Attrs["gyre.channel"], channel)
		}
		nodes := map[string]bool{}
		instances := map[string]bool{}
		for _, s := range spans {
			if s.Name != "fanout" || s.ParentID != api.SpanID {
				continue
			}
			if s.Kind != "consumer" || s.Attrs["gyre.channel"] != channel || s.Attrs["gyre.fanout.reached"] != "1" || s.Attrs["gyre.fanout.subscribers"] != "1" {
				return "a fanout span under the API span is not of one subscriber reached in " + channel + ": " + s.String()
			}
			if s.Service != service {
				return "a fanout span of another service: " + s.String()
			}
			nodes[s.Attrs["gyre.node"]] = true
			instances[s.Resource["service.instance.id"]] = true
		}
		if len(nodes) < 2 || len(instances) < 2 || nodes[""] || instances[""] {
			return fmt.Sprintf("fanout spans under the API span from %d nodes (gyre.node %v, service.instance.id %v), want one from each of two", len(nodes), keys(nodes), keys(instances))
		}
		return ""
	})
}

// findAPISpan finds the span of the HTTP API call of method, a server
// span whose parent is the caller's span; missing says what is wrong
// where there is none.
func findAPISpan(spans []span, method, parent string) (api *span, missing string) {
	name := "POST /api/" + method
	for i, s := range spans {
		if s.Name != name {
			continue
		}
		if s.Kind != "server" || s.ParentID != parent || s.Attrs["gyre.api.method"] != method {
			return nil, fmt.Sprintf("span %q is not a server span of method %s under the caller's span %s: %s", name, method, parent, s)
		}
		return &spans[i], ""
	}
	return nil, "no span " + name
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, ", ")
}
