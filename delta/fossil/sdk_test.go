package fossil

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// sdkScript applies deltas with the applier bundled in centrifuge-js, the code that
// decodes Gyre's delta publications in browsers. The SDK does not export it, so the
// script compiles the SDK's CommonJS build with one extra line that exports it. Each
// case is applied twice: as bytes (the protobuf path) and, for text, through the SDK's
// JSON codec with the delta as a decoded JSON string (the JSON path). Results go to a
// file: the script exits at once, and the client it made must not keep it alive.
const sdkScript = `
const fs = require('fs');
const Module = require('module');
const path = require('path');
const file = process.argv[2];
const m = new Module(file, null);
m.filename = file;
m.paths = Module._nodeModulePaths(path.dirname(file));
m._compile(fs.readFileSync(file, 'utf8') + '\n;module.exports.__applyDelta = applyDelta;\n', file);
const applyDelta = m.exports.__applyDelta;
const client = new m.exports.Centrifuge('ws://127.0.0.1:1/connection/websocket');
const cases = JSON.parse(fs.readFileSync(0, 'utf8'));
const results = cases.map(c => {
  const r = {};
  const source = Buffer.from(c.source || '', 'base64');
  try {
    r.bytes = Buffer.from(applyDelta(new Uint8Array(source), new Uint8Array(Buffer.from(c.delta || '', 'base64')))).toString('base64');
  } catch (e) {
    r.error = String(e && e.message || e);
  }
  if (c.json_delta) {
    try {
      const pub = { delta: true, data: JSON.parse(c.json_delta) };
      const out = client._codec.applyDeltaIfNeeded(pub, new Uint8Array(source));
      r.via_json = Buffer.from(out.newPrevValue).toString('base64');
    } catch (e) {
      r.json_error = String(e && e.message || e);
    }
  }
  return r;
});
fs.writeFileSync(process.argv[3], JSON.stringify(results));
process.exit(0);
`

type sdkCase struct {
	Source    []byte `json:"source"`
	Delta     []byte `json:"delta"`
	JSONDelta string `json:"json_delta,omitempty"` // the delta as a JSON connection carries it
}

type sdkResult struct {
	Bytes     []byte `json:"bytes"`
	Error     string `json:"error"`
	ViaJSON   []byte `json:"via_json"`
	JSONError string `json:"json_error"`
}

// sdkBuild finds the CommonJS build of centrifuge-js, or skips the test.
func sdkBuild(t *testing.T) (node, build string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the cross-check with centrifuge-js needs it")
	}
	build = os.Getenv("GYRE_CENTRIFUGE_JS")
	if build == "" {
		build = filepath.Join("..", "..", "tests", "sdk", "js", "node_modules", "centrifuge", "build", "index.js")
	}
	if _, err := os.Stat(build); err != nil {
		t.Skipf("centrifuge-js not found at %s (run npm ci in tests/sdk/js, or set GYRE_CENTRIFUGE_JS): %v", build, err)
	}
	return node, build
}

// runSDK applies the cases with centrifuge-js and returns its results in order.
func runSDK(t *testing.T, cases []sdkCase) []sdkResult {
	t.Helper()
	node, build := sdkBuild(t)
	script := filepath.Join(t.TempDir(), "apply.js")
	if err := os.WriteFile(script, []byte(sdkScript), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	resultFile := filepath.Join(t.TempDir(), "results.json")
	cmd := exec.Command(node, script, build, resultFile)
	cmd.Stdin = bytes.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node: %v\n%s", err, clip(out))
	}
	out, err := os.ReadFile(resultFile)
	if err != nil {
		t.Fatal(err)
	}
	var results []sdkResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("reading the script's results: %v\n%s", err, clip(out))
	}
	if len(results) != len(cases) {
		t.Fatalf("script returned %d results for %d cases", len(results), len(cases))
	}
	return results
}

// TestSDKAppliesDeltas checks that centrifuge-js rebuilds every target from deltas made
// here, byte for byte, and through its JSON codec where the target is a JSON document,
// as publications on JSON connections are.
func TestSDKAppliesDeltas(t *testing.T) {
	pairs := roundTripPairs()
	rng := rand.New(rand.NewPCG(23, 29))
	for i := range 40 {
		// Non-ASCII text inside JSON strings, where edits meet multi-byte characters.
		src := unicodeText(rng, 10+rng.IntN(3000))
		pairs = append(pairs, pair{"text " + itoa(i), mustJSON(src), mustJSON(editText(rng, src, 1+rng.IntN(10)))})
	}
	cases := make([]sdkCase, len(pairs))
	for i, p := range pairs {
		cases[i] = sdkCase{Source: p.source, Delta: Create(p.source, p.target)}
		if len(p.target) > 0 && json.Valid(p.target) {
			js, err := json.Marshal(string(cases[i].Delta))
			if err != nil {
				t.Fatal(err)
			}
			cases[i].JSONDelta = string(js)
		}
	}
	results := runSDK(t, cases)
	for i, p := range pairs {
		r := results[i]
		if r.Error != "" || !bytes.Equal(r.Bytes, p.target) {
			t.Errorf("%s: centrifuge-js applier: error %q, rebuilt target equal: %v", p.name, r.Error, bytes.Equal(r.Bytes, p.target))
		}
		if cases[i].JSONDelta != "" && (r.JSONError != "" || !bytes.Equal(r.ViaJSON, p.target)) {
			t.Errorf("%s: centrifuge-js JSON codec: error %q, rebuilt target equal: %v", p.name, r.JSONError, bytes.Equal(r.ViaJSON, p.target))
		}
	}
}

// TestSDKRejectsBadChecksum checks that the SDK verifies the same checksum: a delta with
// a wrong one must fail there as it fails here, or the checksum test above would prove
// nothing about it.
func TestSDKRejectsBadChecksum(t *testing.T) {
	src, tgt := similarJSON(31, 3000, 2)
	d := Create(src, tgt)
	bad := append(bytes.Clone(d[:bytes.LastIndexByte(d[:len(d)-1], ',')+1]), "0;"...)
	if _, err := Apply(src, bad); err == nil {
		t.Fatalf("Apply accepted a delta with a zero checksum")
	}
	results := runSDK(t, []sdkCase{{Source: src, Delta: bad}})
	if results[0].Error == "" {
		t.Fatalf("centrifuge-js accepted a delta with a wrong checksum: %q", clip(bad))
	}
}
