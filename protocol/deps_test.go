package protocol

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDependencies keeps protocol a leaf: it is imported by every layer of Gyre, so it
// must import none of them, and outside the standard library only protobuf runtimes.
func TestDependencies(t *testing.T) {
	allowed := []string{"google.golang.org/protobuf/", "github.com/planetscale/vtprotobuf/"}
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
			first, _, _ := strings.Cut(path, "/")
			if !strings.Contains(first, ".") {
				continue // standard library
			}
			ok := false
			for _, prefix := range allowed {
				ok = ok || strings.HasPrefix(path, prefix)
			}
			if !ok {
				t.Errorf("%s imports %s: protocol may only depend on the protobuf runtimes", name, path)
			}
		}
	}
}
