package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster, of masters only unless started with
// replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n cluster-enabled servers, joins them with
// redis-cli --cluster create (slots split evenly) and waits until every
// node reports the cluster ok.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return startCluster(t, n, 0)
}

// StartClusterWithReplicas starts masters cluster-enabled servers and
// replicas more for each of them; redis-cli --cluster create decides which
// node is a replica of which.
func StartClusterWithReplicas(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	return startCluster(t, masters*(1+replicas), replicas)
}

func startCluster(t testing.TB, n, replicas int) *Cluster {
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
	create = append(create, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := c.Nodes[0].Cli(create...); err != nil {
		t.Fatalf("redistest: create cluster: %v: %s", err, out)
	}
	c.waitOK(t)
	if replicas > 0 {
		c.waitReplicasInSync(t)
	}
	return c
}

// waitReplicasInSync waits until every replica is linked to its master
// and has its dataset, so that a failover does not find an empty one.
func (c *Cluster) waitReplicasInSync(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for _, s := range c.Nodes {
		for {
			out, err := s.Cli("info", "replication")
			if err == nil && (strings.Contains(out, "role:master") || strings.Contains(out, "master_link_status:up") && strings.Contains(out, "master_sync_in_progress:0")) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster replica %s not in sync: %v %s", s.Addr, err, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
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
