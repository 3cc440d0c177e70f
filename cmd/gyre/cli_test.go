package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSubcommandHelp: -h and --help print the subcommand's usage on
// stdout and exit 0, for every subcommand and for the server itself.
func TestSubcommandHelp(t *testing.T) {
	t.Parallel()
	cmds := map[string]string{
		"genconfig": "gyre genconfig", "checkconfig": "gyre checkconfig", "defaultconfig": "gyre defaultconfig",
		"gentoken": "gyre gentoken", "gensubtoken": "gyre gensubtoken", "checktoken": "gyre checktoken",
		"checksubtoken": "gyre checksubtoken", "filter": "gyre filter", "bench": "gyre bench", "health": "gyre health",
	}
	for cmd, want := range cmds {
		for _, flag := range []string{"-h", "--help"} {
			t.Run(cmd+flag, func(t *testing.T) {
				t.Parallel()
				code, out, errOut := runTool(t, t.TempDir(), cmd, flag)
				if code != 0 || !strings.Contains(out+errOut, "Usage: "+want) || strings.Contains(errOut, "help requested") {
					t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
				}
			})
		}
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"-c", "config.json", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runTool(t, t.TempDir(), args...)
			if code != 0 || !strings.Contains(out, "gyre checksubtoken") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
		})
	}
	t.Run("help gentoken", func(t *testing.T) {
		t.Parallel()
		code, out, _ := runTool(t, t.TempDir(), "help", "gentoken")
		if code != 0 || !strings.Contains(out, "Usage: gyre gentoken") || !strings.Contains(out, "-u") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}, {"-c", "config.json", "--version"}} {
		code, out, errOut := runTool(t, t.TempDir(), args...)
		if code != 0 || !strings.HasPrefix(out, "gyre ") || strings.TrimSpace(out) == "gyre" {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
		}
	}
}

// TestGenconfigFormat: -f alone names the file after the format.
func TestGenconfigFormat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args       []string
		file, want string
	}{
		{[]string{"-f", "yaml"}, "config.yaml", "hmac_secret_key: "},
		{[]string{"--format", "toml"}, "config.toml", "hmac_secret_key = "},
		{nil, "config.json", `"hmac_secret_key": `},
		{[]string{"-f", "yaml", "-c", "my.conf"}, "my.conf", "hmac_secret_key: "},
		{[]string{"--config", "out.toml"}, "out.toml", "hmac_secret_key = "},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			code, out, errOut := runTool(t, dir, append([]string{"genconfig"}, tt.args...)...)
			if code != 0 || !strings.Contains(out, "wrote "+tt.file) {
				t.Fatalf("exit %d: %s%s", code, out, errOut)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("files %v, want only %s", entries, tt.file)
			}
			data, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil || !strings.Contains(string(data), tt.want) {
				t.Fatalf("%s: %v\n%s", tt.file, err, data)
			}
		})
	}
}

func TestGentokenAnonymousWarning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runTool(t, dir, "genconfig"); code != 0 {
		t.Fatalf("genconfig: exit %d: %s", code, errOut)
	}
	code, out, errOut := runTool(t, dir, "gentoken")
	if code != 0 || strings.Count(strings.TrimSpace(out), ".") != 2 || !strings.Contains(errOut, "anonymous") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if sub := jwtClaims(t, strings.TrimSpace(out))["sub"]; sub != "" {
		t.Fatalf("sub %v, want empty", sub)
	}
	for _, args := range [][]string{{"-u", "alice"}, {"--user", "alice", "--ttl", "60", "--config", "config.json"}, {"-q"}} {
		code, out, errOut := runTool(t, dir, append([]string{"gentoken"}, args...)...)
		if code != 0 || strings.Contains(errOut, "anonymous") || strings.Count(out, ".") != 2 {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestChecksubtoken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runTool(t, dir, "genconfig"); code != 0 {
		t.Fatalf("genconfig: exit %d: %s", code, errOut)
	}
	separate := `{"client":{"token":{"hmac_secret_key":"connection-secret"},"subscription_token":{"enabled":true,"hmac_secret_key":"subscription-secret"}}}`
	if err := os.WriteFile(filepath.Join(dir, "separate.json"), []byte(separate), 0o600); err != nil {
		t.Fatal(err)
	}
	gen := func(args ...string) string {
		t.Helper()
		code, out, errOut := runTool(t, dir, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	sub := gen("gensubtoken", "-u", "alice", "-s", "news")
	conn := gen("gentoken", "-u", "alice")
	sepSub := gen("gensubtoken", "-c", "separate.json", "-u", "bob", "-s", "room")
	sepConn := gen("gentoken", "-c", "separate.json", "-u", "bob")

	tests := []struct {
		name string
		args []string
		ok   bool
		want string
	}{
		{"valid", []string{sub}, true, `user "alice", channel "news"`},
		{"connection token has no channel", []string{conn}, false, "no channel claim"},
		{"garbage", []string{"a.b.c"}, false, "invalid token"},
		{"no token", nil, false, "give one token"},
		{"separate keys", []string{"-c", "separate.json", sepSub}, true, `channel "room"`},
		{"signed with the connection key", []string{"-c", "separate.json", gen("gensubtoken", "-u", "x", "-s", "c")}, false, "signature"},
		{"separate keys, connection token", []string{"-c", "separate.json", sepConn}, false, "invalid token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runTool(t, dir, append([]string{"checksubtoken"}, tt.args...)...)
			if (code == 0) != tt.ok || !strings.Contains(out+errOut, tt.want) {
				t.Fatalf("exit %d: %s%s; want success=%v and %q", code, out, errOut, tt.ok, tt.want)
			}
			if n := strings.Count(errOut, "invalid token"); n > 1 {
				t.Fatalf("stderr says invalid token %d times: %s", n, errOut)
			}
		})
	}
}

// TestConfigWarningsSaidOnce: a config warning is logged at start and on
// reload with one "config:" prefix, and with its suggestion.
func TestConfigWarningsSaidOnce(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", `{"client": {"token": {"hmac_secret_key": "s"}}, "http_server": {"prot": 1}}`)
	p := start(t, nil, "-c", path, "--http_server.port", "0")
	const want = `config: unknown key "http_server.prot" ignored (did you mean "port"?)`
	p.waitLog(want, nil)
	p.signal(syscall.SIGHUP)
	p.waitLog("config reloaded", nil)
	p.waitFor("the warning again on reload", func() bool {
		n := 0
		for _, l := range p.logs {
			if l["msg"] == want {
				n++
			}
		}
		return n == 2
	})
	if strings.Contains(p.stderrText(), "config: config:") {
		t.Fatalf("doubled prefix in the log:\n%s", p.stderrText())
	}
}

// TestConfigSyntaxErrorPosition: checkconfig and the server name the
// file, line and column of a syntax error.
func TestConfigSyntaxErrorPosition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{\n  \"client\": {\n    \"channel_limit\": 5,,\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"checkconfig"}, {"-c", "config.json"}} {
		code, _, errOut := runTool(t, dir, args...)
		if code == 0 || !strings.Contains(errOut, "config.json:3:24: parse JSON: invalid character ','") || strings.Count(errOut, "config.json") != 1 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "typo.json"), []byte(`{"client": {"channel_limt": 5}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runTool(t, dir, "checkconfig", "-c", "typo.json")
	if !strings.Contains(errOut, `unknown key "client.channel_limt" ignored (did you mean "channel_limit"?)`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
