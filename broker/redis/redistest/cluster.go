package redistest

import (
	"fmt"
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
	c, err := formCluster(n, replicas, func(port int, args ...string) (*Server, error) {
		return startOn(t, port, "", args...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// formCluster starts n cluster-enabled servers with start and joins them.
// On error the servers started are left to the caller's cleanup.
func formCluster(n, replicas int, start func(port int, args ...string) (*Server, error)) (*Cluster, error) {
	c := &Cluster{}
	create := []string{"--cluster", "create"}
	for range n {
		port, err := freePort(true)
		if err != nil {
			return c, err
		}
		s, err := start(port,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
		)
		if err != nil {
			return c, err
		}
		c.Nodes = append(c.Nodes, s)
		create = append(create, s.Addr)
	}
	create = append(create, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := c.Nodes[0].Cli(create...); err != nil {
		return c, fmt.Errorf("redistest: create cluster: %w: %s", err, out)
	}
	if err := c.waitOK(); err != nil {
		return c, err
	}
	if replicas > 0 {
		return c, c.waitReplicasInSync()
	}
	return c, nil
}

// waitReplicasInSync waits until every replica is linked to its master
// and has its dataset, so that a failover does not find an empty one.
func (c *Cluster) waitReplicasInSync() error {
	deadline := time.Now().Add(startTimeout)
	for _, s := range c.Nodes {
		for {
			out, err := s.Cli("info", "replication")
			if err == nil && (strings.Contains(out, "role:master") || strings.Contains(out, "master_link_status:up") && strings.Contains(out, "master_sync_in_progress:0")) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("redistest: cluster replica %s not in sync: %v %s", s.Addr, err, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Addrs returns the addresses of every node, for seeding a client.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr
	}
	return out
}

// Kill kills every node.
func (c *Cluster) Kill() {
	for _, s := range c.Nodes {
		s.Kill()
	}
}

func (c *Cluster) waitOK() error {
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
				return fmt.Errorf("redistest: cluster node %s not ok: %v %s", s.Addr, err, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
