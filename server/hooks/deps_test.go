package hooks

import (
	goparser "go/parser"
	gotoken "go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDependencies keeps the package about delivery: of Gyre it imports
// the wire messages only, so that the engine's events reach it through
// the server's wiring (an adapter of broker.OccupancyHandler there), not
// through an import of the engine or the server from here.
func TestDependencies(t *testing.T) {
	const mod = "github.com/gyrehq/gyre"
	allowed := []string{mod + "/server/proxy/proxypb", mod + "/server/hooks/hookspb"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, goparser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if (path == mod || strings.HasPrefix(path, mod+"/")) && !slices.Contains(allowed, path) {
				t.Errorf("%s imports %s: hooks imports only the wire messages of Gyre", name, path)
			}
		}
	}
}
