package api_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/api"
)

func readAPIDoc(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatalf("read docs/api.md: %v", err)
	}
	return doc
}

// TestDocsMethodListUpToDate: the method list of docs/api.md is the
// table's.
func TestDocsMethodListUpToDate(t *testing.T) {
	doc := readAPIDoc(t)
	want, err := api.WithMethodList(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, want) {
		t.Error("the method list of docs/api.md is out of date: run go generate ./server/api")
	}
}

// TestDocsDescribeEveryMethod: docs/api.md has a section for each method
// of the table, and none for a method the table does not have.
func TestDocsDescribeEveryMethod(t *testing.T) {
	doc := string(readAPIDoc(t))
	_, methods, ok := strings.Cut(doc, "\n## Methods\n")
	if !ok {
		t.Fatal("docs/api.md has no Methods section")
	}
	methods, _, _ = strings.Cut(methods, "\n## ")
	var documented []string
	for line := range strings.SplitSeq(methods, "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			documented = append(documented, name)
		}
	}
	if !slices.Equal(documented, api.MethodNames()) {
		t.Errorf("docs/api.md describes %v; the table has %v", documented, api.MethodNames())
	}
}

// TestMethodTable: every entry is complete, and the admin app asks only
// for fields it knows.
func TestMethodTable(t *testing.T) {
	adminFields := []string{"channel", "channels", "user", "key", "data", "tags"}
	legacy := map[int]string{}
	for _, m := range api.Methods() {
		if m.Name == "" || m.Summary == "" || m.GRPC == "" {
			t.Errorf("%+v: name, summary and gRPC rpc are required", m)
		}
		if other, dup := legacy[m.Legacy]; dup && m.Legacy >= 0 {
			t.Errorf("%s and %s have legacy number %d", m.Name, other, m.Legacy)
		}
		legacy[m.Legacy] = m.Name
		for _, f := range m.Admin {
			if !slices.Contains(adminFields, f) {
				t.Errorf("%s: admin field %q is not one of %v", m.Name, f, adminFields)
			}
		}
		if api.MethodByName(m.Name) != m {
			t.Errorf("MethodByName(%q) is not its entry", m.Name)
		}
	}
}
