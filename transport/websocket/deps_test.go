package websocket

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDependencies keeps the byte layer below the engine: besides the
// standard library it may use the WebSocket library (and its header
// parser), the deflate library and the protocol
// package (for its Type), and the stack grower (a leaf of the runtime's
// concerns), nothing else of Gyre.
func TestDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/gobwas/ws":                      true,
		"github.com/gobwas/httphead":                true,
		"github.com/klauspost/compress/flate":       true,
		"github.com/gyrehq/gyre/protocol":           true,
		"github.com/gyrehq/gyre/internal/stackgrow": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			stdlib := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
			if !stdlib && !allowed[path] {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
