package kafkatest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The user of a SASL broker that may do anything: create topics, produce,
// add SCRAM users. It authenticates with PLAIN.
const (
	AdminUser     = "admin"
	AdminPassword = "admin-secret"
)

// StartSASL runs a broker of the test's own whose listener takes SASL on
// plain TCP (SASL_PLAINTEXT): PLAIN for the admin and the users of
// plainUsers (name → password), SCRAM-SHA-256 and SCRAM-SHA-512 for the
// users AddSCRAMUser adds. It is killed when the test ends.
func StartSASL(t testing.TB, plainUsers map[string]string) *Broker {
	t.Helper()
	RequireLocal(t)
	dir := t.TempDir()
	if err := configureSASL(dir, plainUsers); err != nil {
		t.Fatal(err)
	}
	b, err := StartDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Kill)
	return b
}

var voters = regexp.MustCompile(`(?m)^controller\.quorum\.voters=1@(\S+)$`)

// configureSASL writes the config of a broker in dir with
// scripts/start-kafka, then turns its listener to SASL.
func configureSASL(dir string, users map[string]string) error {
	script, err := startScript()
	if err != nil {
		return err
	}
	if out, err := exec.Command(script, "--configure", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("kafkatest: start-kafka --configure: %v: %s", err, out)
	}
	props := filepath.Join(dir, "server.properties")
	conf, err := os.ReadFile(props)
	if err != nil {
		return err
	}
	addr, err := os.ReadFile(filepath.Join(dir, "address"))
	if err != nil {
		return err
	}
	m := voters.FindSubmatch(conf)
	if m == nil {
		return fmt.Errorf("kafkatest: no controller.quorum.voters in %s", props)
	}
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + AdminUser +
		`" password="` + AdminPassword + `" user_` + AdminUser + `="` + AdminPassword + `"`
	for name, pass := range users {
		jaas += ` user_` + name + `="` + pass + `"`
	}
	// Later lines of a key override the earlier ones.
	extra := strings.Join([]string{
		"listeners=SASL_PLAINTEXT://" + strings.TrimSpace(string(addr)) + ",CONTROLLER://" + string(m[1]),
		"advertised.listeners=SASL_PLAINTEXT://" + strings.TrimSpace(string(addr)),
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas + ";",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
	}, "\n")
	return os.WriteFile(props, append(conf, []byte("\n"+extra+"\n")...), 0o644)
}

// AdminAuth is the client option that authenticates as the admin.
func AdminAuth() kgo.Opt {
	return kgo.SASL(plain.Auth{User: AdminUser, Pass: AdminPassword}.AsMechanism())
}

// AddSCRAMUser gives user password for SCRAM-SHA-256 and SCRAM-SHA-512 on
// the SASL broker b.
func (b *Broker) AddSCRAMUser(t testing.TB, user, password string) {
	t.Helper()
	cl := newClient(t, []string{b.Addr}, AdminAuth())
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	// One mechanism a request: the broker refuses a user named twice.
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
			{User: user, Mechanism: m, Iterations: 4096, Password: password},
		})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("kafkatest: SCRAM user %s (%v): %v", user, m, err)
		}
	}
}
