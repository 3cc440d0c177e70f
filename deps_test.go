package gyre_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyDirection keeps imports flowing one way: leaves import
// nothing of the engine, the engine imports no server code and no client of
// an external broker.
func TestDependencyDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/gyrehq/gyre"
	rules := []struct {
		pkg    string
		banned []string
		why    string
	}{
		{"./protocol", []string{mod, mod + "/broker", mod + "/server", mod + "/token"}, "protocol is a leaf"},
		{"./token", []string{mod, mod + "/protocol", mod + "/server"}, "token is a leaf"},
		{"./broker/...", []string{mod, mod + "/server"}, "brokers never reach into the engine"},
		{"./transport/...", []string{mod, mod + "/server"}, "transports move bytes only"},
		{".", []string{mod + "/server", "github.com/redis/", "github.com/nats-io/", "google.golang.org/grpc"}, "the library stays free of server code, broker clients and gRPC"},
	}
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", r.pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, b := range r.banned {
					if dep == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(dep, b)) || strings.HasPrefix(dep, b+"/") && b != mod {
						t.Errorf("%s imports %s: %s", r.pkg, dep, r.why)
					}
				}
			}
		})
	}
}
