package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCentrifugoEveryKey loads a Centrifugo configuration that sets every
// key of Centrifugo's default dump (testdata/centrifugo_defaults.json) to a
// value other than its default, lists of tables included, and checks that
// Gyre either applies each key (its value differs from Gyre's default) or
// reports it (Unsupported names it, or the table it switches on). A key
// Gyre read and then dropped without a word would fail here.
func TestCentrifugoEveryKey(t *testing.T) {
	for _, name := range []string{"centrifugo_every_key.json", "centrifugo_every_key.yaml"} {
		t.Run(name, func(t *testing.T) {
			if n := checkAppliedOrReported(t, name); n < 250 {
				t.Fatalf("only %d keys checked; the file should set every key", n)
			}
		})
	}
}

// TestCentrifugoExamples runs the same check over configurations in the
// shape of Centrifugo's documented examples, in each format.
func TestCentrifugoExamples(t *testing.T) {
	for _, name := range []string{"centrifugo.json", "centrifugo.yaml", "centrifugo.toml"} {
		t.Run(name, func(t *testing.T) { checkAppliedOrReported(t, name) })
	}
}

// checkAppliedOrReported loads testdata/name and checks each key it sets:
// applied (Gyre's value differs from its default) or reported (Unsupported
// names it or the table it switches on). It returns how many keys it saw.
func checkAppliedOrReported(t *testing.T, name string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	format, err := FormatOf(name)
	if err != nil {
		t.Fatal(err)
	}
	c, warnings, err := LoadBytes(data, format)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "unknown key") {
			t.Errorf("a Centrifugo key is unknown to Gyre: %s", w)
		}
	}
	var reported []string
	for _, k := range c.Unsupported() {
		reported = append(reported, k.Path)
	}
	tree, err := parse(data, format)
	if err != nil {
		t.Fatal(err)
	}
	def := reflect.ValueOf(Default()).Elem()
	got := reflect.ValueOf(c).Elem()
	paths := leafPaths(tree, "")
	for _, p := range paths {
		if isReported(p, reported) {
			continue
		}
		gv, _, _, err := resolve(got, p)
		if i := strings.LastIndexByte(p, '.'); err != nil && i > 0 {
			// An entry of a table of strings (static_headers): the
			// table is the key.
			if mv, _, _, merr := resolve(got, p[:i]); merr == nil && mv.Kind() == reflect.Map {
				p, gv, err = p[:i], mv, nil
			}
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		dv, _, _, err := resolve(def, p)
		if err != nil { // an item of a list: the default has none
			continue
		}
		if reflect.DeepEqual(gv.Interface(), dv.Interface()) {
			t.Errorf("%s is set to a non-default value but neither applied nor reported", p)
		}
	}
	return len(paths)
}

// isReported tells whether path, or a table holding it, is among the
// reported keys; a section reported by its enabled key covers its siblings.
func isReported(path string, reported []string) bool {
	for _, r := range reported {
		if path == r || strings.HasPrefix(path, r+".") || strings.HasPrefix(path, r+"[") {
			return true
		}
		if section, ok := strings.CutSuffix(r, ".enabled"); ok && strings.HasPrefix(path, section+".") {
			return true
		}
	}
	return false
}

// leafPaths lists the paths of every scalar and list of scalars in a
// parsed file, items of lists of tables indexed as Set expects them.
func leafPaths(v any, path string) []string {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		var out []string
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, leafPaths(x[k], join(k))...)
		}
		return out
	case []any:
		if len(x) > 0 {
			if _, ok := x[0].(map[string]any); ok {
				var out []string
				for i, item := range x {
					out = append(out, leafPaths(item, path+"["+strconv.Itoa(i)+"]")...)
				}
				return out
			}
		}
	}
	return []string{path}
}
