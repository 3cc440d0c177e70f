package config

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestDocsUpToDate(t *testing.T) {
	got, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatalf("read docs/config.md: %v (run: go generate ./server/config)", err)
	}
	if !bytes.Equal(got, MarkdownReference()) {
		t.Error("docs/config.md is out of date: run go generate ./server/config")
	}
}

// TestEveryKeyDocumented keeps the one source of truth complete: every key
// has a help text and appears in the reference.
func TestEveryKeyDocumented(t *testing.T) {
	var check func(t reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		for _, f := range fieldsOf(typ) {
			p := joinPath(path, f.key)
			if f.help == "" {
				t.Errorf("%s has no help text", p)
			}
			switch f.kind {
			case kindStruct:
				check(f.typ, p)
			case kindStructs:
				check(f.typ.Elem(), p+"[]")
			}
		}
	}
	check(reflect.TypeFor[Config](), "")
	doc := string(MarkdownReference())
	walkLeaves(reflect.TypeFor[Config](), "", func(path string, f field) {
		if f.kind == kindUnimplemented {
			return
		}
		if !strings.Contains(doc, "`"+path+"`") && !isChannelOptionPath(path) {
			t.Errorf("%s is missing from the reference", path)
		}
	})
}

// isChannelOptionPath tells keys documented once under "Channel options".
func isChannelOptionPath(path string) bool {
	return strings.HasPrefix(path, "channel.without_namespace.")
}

// TestUnsupportedKeysSayWhatInstead: a user told that a key is ignored is
// also told what to do about it.
func TestUnsupportedKeysSayWhatInstead(t *testing.T) {
	var check func(typ reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		for _, f := range fieldsOf(typ) {
			p := joinPath(path, f.key)
			switch f.kind {
			case kindUnimplemented:
				if f.instead == "" {
					t.Errorf("%s is Unimplemented but has no unsupported tag saying what to do instead", p)
				}
			case kindStruct:
				check(f.typ, p)
			case kindStructs:
				check(f.typ.Elem(), p+"[]")
			}
		}
	}
	check(reflect.TypeFor[Config](), "")
	doc := string(MarkdownReference())
	for _, key := range []string{"`websocket.compression`", "`broker.nats.*`", "`graphite`", "`client.connect_include_server_time` | supported"} {
		if !strings.Contains(doc, key) {
			t.Errorf("the status table does not contain %s", key)
		}
	}
}
