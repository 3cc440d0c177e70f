package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// welcome waits for the development-defaults welcome of p and returns the
// printed demo page URL and API key.
func welcome(t *testing.T, p *proc) (demoURL, apiKey string) {
	t.Helper()
	p.waitFor("welcome", func() bool {
		for _, line := range strings.Split(p.stdout.String(), "\n") {
			line = strings.TrimSpace(line)
			if u, ok := strings.CutPrefix(line, "Demo page:"); ok {
				demoURL = strings.TrimSpace(u)
			}
			if k, ok := strings.CutPrefix(line, "API key:"); ok {
				apiKey = strings.TrimSpace(k)
			}
		}
		return demoURL != "" && apiKey != ""
	})
	return demoURL, apiKey
}

// TestReadmePublish runs the publish command of the README's quickstart,
// as written, against a server started as the quickstart starts it.
func TestReadmePublish(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on the PATH")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, quickstart, _ := strings.Cut(string(readme), "## Quickstart")
	quickstart, _, _ = strings.Cut(quickstart, "\n## ")
	var command string
	for _, line := range strings.Split(quickstart, "\n") {
		if strings.HasPrefix(line, "curl ") {
			command = line
		}
	}
	if command == "" || !strings.Contains(command, "$KEY") || !strings.Contains(command, "http://localhost:8000/") {
		t.Fatalf("the quickstart has no curl line with $KEY and http://localhost:8000/:\n%s", quickstart)
	}
	p := start(t, nil, "--http_server.port", "0")
	_, key := welcome(t, p)
	command = strings.Replace(command, "localhost:8000", p.addrs()[0], 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = cleanEnv("KEY="+key, "PATH="+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(`"result"`)) || bytes.Contains(out, []byte(`"error"`)) {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

// chromium finds the browser the admin tests use (scripts/install-chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM_BIN"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no Chromium (scripts/install-chromium installs it)")
	return ""
}

// renderedDOM loads url in headless Chromium and returns the page as its
// scripts left it.
func renderedDOM(t *testing.T, browser, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.Bytes())
	}
	return string(out)
}

// renderedUntil renders url until its DOM satisfies ok, and returns ""
// then, else the last DOM after a few tries: a render is a snapshot after
// a budget of virtual time, and the page's WebSocket exchange takes real
// time, which a loaded machine may stretch past it.
func renderedUntil(t *testing.T, browser, url string, ok func(dom string) bool) string {
	t.Helper()
	var dom string
	for range 4 {
		if dom = renderedDOM(t, browser, url); ok(dom) {
			return ""
		}
	}
	return dom
}

// TestDemoPage: the demo page of the development defaults connects with
// the printed URL, and without a token explains how to get one instead of
// trying (which ends in "3501 bad request").
func TestDemoPage(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	p := start(t, nil, "--http_server.port", "0")
	demoURL, _ := welcome(t, p)
	demoURL = strings.Replace(demoURL, "localhost", "127.0.0.1", 1)

	bare := renderedUntil(t, browser, p.url()+"/", func(dom string) bool {
		return strings.Contains(dom, `<div id="notoken">`) && strings.Contains(dom, "gyre gentoken") &&
			strings.Contains(dom, "no token in the address") && !strings.Contains(dom, "3501")
	})
	if bare != "" {
		t.Fatalf("the page without a token does not explain itself:\n%s", bare)
	}
	withToken := renderedUntil(t, browser, demoURL, func(dom string) bool {
		return strings.Contains(dom, `<div id="notoken" hidden`) && strings.Contains(dom, "subscribed to demo")
	})
	if withToken != "" {
		t.Fatalf("the page with the printed token did not subscribe:\n%s", withToken)
	}
	// After a restart the printed token is refused (new secrets): the
	// page says why, instead of a bare close code.
	restarted := start(t, nil, "--http_server.port", "0")
	_, query, _ := strings.Cut(demoURL, "/?")
	stale := renderedUntil(t, browser, restarted.url()+"/?"+query, func(dom string) bool {
		return strings.Contains(dom, `<div id="notoken">`) && strings.Contains(dom, "not valid for this server")
	})
	if stale != "" {
		t.Fatalf("the page with a token of an earlier start does not explain itself:\n%s", stale)
	}
}

// TestDemoPageHint: what the demo page tells someone who opened it
// without a token is what works: the address gyre printed (labelled as
// printed), and that with a config file the page is not served at all.
func TestDemoPageHint(t *testing.T) {
	t.Parallel()
	p := start(t, nil, "--http_server.port", "0")
	welcome(t, p)
	status, page := httpGet(t, p.url()+"/")
	if status != http.StatusOK {
		t.Fatalf("GET /: status %d", status)
	}
	_, hint, _ := strings.Cut(string(page), `<div id="notoken" hidden>`)
	hint, _, _ = strings.Cut(hint, "</div>")
	label := "Demo page:"
	if !strings.Contains(p.stdoutText(), label) || !strings.Contains(hint, label) {
		t.Errorf("the hint does not quote the line %q the server printed:\n%s", label, hint)
	}
	if !strings.Contains(hint, "only served without a config file") || strings.Contains(hint, "open this page as") {
		t.Errorf("the hint does not say that the page is served only without a config file:\n%s", hint)
	}
	withConfig := start(t, nil, "-c", writeFile(t, "config.json", `{}`), "--http_server.port", "0")
	if status, _ := httpGet(t, withConfig.url()+"/"); status != http.StatusNotFound {
		t.Fatalf("GET / with a config: status %d, want 404 as the hint says", status)
	}
}

// TestBuiltBinaryIgnored: the binary README's "go build -o gyre ./cmd/gyre"
// leaves in the repository's root is ignored by git, and the command's
// sources are not.
func TestBuiltBinaryIgnored(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on the PATH")
	}
	root := "../.."
	if err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skip("not in a git work tree")
	}
	readme, err := os.ReadFile(root + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "go build -o gyre ./cmd/gyre") {
		t.Fatal(`README.md no longer builds with "go build -o gyre ./cmd/gyre": update this test`)
	}
	for path, ignored := range map[string]bool{"gyre": true, "cmd/gyre/main.go": false, "cmd/gyre/serve.go": false} {
		// --no-index: the rules decide, whether or not the file is tracked.
		err := exec.Command("git", "-C", root, "check-ignore", "--no-index", "-q", path).Run()
		if got := err == nil; got != ignored {
			t.Errorf("git check-ignore %s: ignored %v, want %v", path, got, ignored)
		}
	}
}
