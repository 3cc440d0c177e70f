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

// Sentinel is a master, one replica of it and one Sentinel watching them
// with a quorum of one, so that a failover needs no other Sentinel.
type Sentinel struct {
	Master   *Server
	Replica  *Server
	Sentinel *Server
}

// StartSentinel starts the three processes and waits until the replica is
// in sync and the Sentinel knows both.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	Require(t)
	master := Start(t)
	replica := Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n"+
		"sentinel parallel-syncs %[1]s 1\n", MasterName, master.Port)
	sentinel := startProcess(t, port, conf, func(dir string) []string {
		return []string{"--sentinel"}
	})
	s := &Sentinel{Master: master, Replica: replica, Sentinel: sentinel}
	s.waitUntil(t, "the replica to sync and the Sentinel to see it", func() bool {
		info, err := replica.Cli("info", "replication")
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		out, err := sentinel.Cli("sentinel", "replicas", MasterName)
		return err == nil && strings.Contains(out, strconv.Itoa(replica.Port))
	})
	return s
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
