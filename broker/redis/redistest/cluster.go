package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of masters without replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n cluster-enabled servers, joins them with
// redis-cli --cluster create (slots split evenly) and waits until every
// node reports the cluster ok.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	Require(t)
	c := &Cluster{}
	create := []string{"--cluster", "create"}
	for range n {
		port, err := freePort(true)
		if err != nil {
			t.Fatal(err)
		}
		s := startOn(t, port, "",
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
		)
		c.Nodes = append(c.Nodes, s)
		create = append(create, s.Addr)
	}
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := c.Nodes[0].Cli(create...); err != nil {
		t.Fatalf("redistest: create cluster: %v: %s", err, out)
	}
	c.waitOK(t)
	return c
}

// Addrs returns the addresses of every node, for seeding a client.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr
	}
	return out
}

func (c *Cluster) waitOK(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for _, s := range c.Nodes {
		for {
			// Every node must know every other and see all slots served,
			// or a client seeded from it gets a partial slot map.
			out, err := s.Cli("cluster", "info")
			if err == nil && strings.Contains(out, "cluster_state:ok") &&
				strings.Contains(out, "cluster_slots_ok:16384") &&
				strings.Contains(out, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster node %s not ok: %v %s", s.Addr, err, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
