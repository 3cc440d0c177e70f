package redistest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MasterName is the name under which the Sentinel watches the master.
const MasterName = "gyremaster"

// Sentinel is a master, one replica of it and three Sentinels watching
// them with a quorum of two, as a production setup runs them: a failover
// needs two Sentinels to agree the master is down, and one elected leader
// to carry it out.
type Sentinel struct {
	Master  *Server
	Replica *Server
	// Sentinel is the first of Sentinels.
	Sentinel  *Server
	Sentinels []*Server
}

// sentinelCount and sentinelQuorum shape the Sentinel group.
const (
	sentinelCount  = 3
	sentinelQuorum = 2
)

// StartSentinel starts the five processes and waits until the replica is
// in sync and every Sentinel knows it and the other Sentinels.
//
// masterArgs are extra redis-server arguments for the master alone, e.g.
// to make it refuse the reconfiguration a failover sends it.
func StartSentinel(t testing.TB, masterArgs ...string) *Sentinel {
	t.Helper()
	Require(t)
	master := Start(t, masterArgs...)
	replica := Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	s := &Sentinel{Master: master, Replica: replica}
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n"+
		"sentinel parallel-syncs %[1]s 1\n", MasterName, master.Port, sentinelQuorum)
	for range sentinelCount {
		port, err := freePort(false)
		if err != nil {
			t.Fatal(err)
		}
		s.Sentinels = append(s.Sentinels, startProcess(t, port, conf, func(dir string) []string {
			return []string{"--sentinel"}
		}))
	}
	s.Sentinel = s.Sentinels[0]
	s.waitUntil(t, "the replica to sync and the Sentinels to see it and each other", func() bool {
		info, err := replica.Cli("info", "replication")
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		for _, sn := range s.Sentinels {
			out, err := sn.Cli("sentinel", "replicas", MasterName)
			if err != nil || !strings.Contains(out, strconv.Itoa(replica.Port)) {
				return false
			}
			out, err = sn.Cli("sentinel", "ckquorum", MasterName)
			if err != nil || !strings.HasPrefix(out, "OK") {
				return false
			}
		}
		return true
	})
	return s
}

// Addrs are the Sentinels' addresses.
func (s *Sentinel) Addrs() []string {
	addrs := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		addrs[i] = sn.Addr
	}
	return addrs
}

// Failover asks a Sentinel for a graceful failover (SENTINEL FAILOVER):
// the replica is promoted although the master is healthy, and the old
// master becomes its replica.
func (s *Sentinel) Failover(t testing.TB) {
	t.Helper()
	out, err := s.Sentinel.Cli("sentinel", "failover", MasterName)
	if err != nil || !strings.HasPrefix(out, "OK") {
		t.Fatalf("redistest: SENTINEL FAILOVER: %q, %v", out, err)
	}
}

// MasterAddr asks the Sentinel which address the master has now.
func (s *Sentinel) MasterAddr() (string, error) {
	out, err := s.Sentinel.Cli("sentinel", "get-master-addr-by-name", MasterName)
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return "", fmt.Errorf("redistest: sentinel answered %q", out)
	}
	return f[0] + ":" + f[1], nil
}

// WaitMaster waits until the Sentinel names addr as the master.
func (s *Sentinel) WaitMaster(t testing.TB, addr string) {
	t.Helper()
	s.waitUntil(t, "the Sentinel to name "+addr+" master", func() bool {
		got, err := s.MasterAddr()
		return err == nil && got == addr
	})
}

func (s *Sentinel) waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
