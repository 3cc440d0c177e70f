package main

import (
	"bytes"
	"context"
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

// TestDemoPage: the demo page of the development defaults connects with
// the printed URL, and without a token explains how to get one instead of
// trying (which ends in "3501 bad request").
func TestDemoPage(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	p := start(t, nil, "--http_server.port", "0")
	demoURL, _ := welcome(t, p)
	demoURL = strings.Replace(demoURL, "localhost", "127.0.0.1", 1)

	bare := renderedDOM(t, browser, p.url()+"/")
	if !strings.Contains(bare, `<div id="notoken">`) || !strings.Contains(bare, "gyre gentoken") ||
		!strings.Contains(bare, "no token in the address") || strings.Contains(bare, "3501") {
		t.Fatalf("the page without a token does not explain itself:\n%s", bare)
	}
	withToken := renderedDOM(t, browser, demoURL)
	if !strings.Contains(withToken, `<div id="notoken" hidden`) || !strings.Contains(withToken, "subscribed to demo") {
		t.Fatalf("the page with the printed token did not subscribe:\n%s", withToken)
	}
}
