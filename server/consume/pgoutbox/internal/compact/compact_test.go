package compact

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"n": 1, "m": [1, 2, {"a": null}]}`:        `{"n":1,"m":[1,2,{"a":null}]}`,
		`{"s": "a b\t \" c\\", "t": "\\\" x "}`:     `{"s":"a b\t \" c\\","t":"\\\" x "}`,
		" \n\t\r[ true ,false ] ":                   `[true,false]`,
		`"  spaces  "`:                              `"  spaces  "`,
		`{"k": "\u00e9 \ud83d\ude00", "e": "\\\\"}`: `{"k":"\u00e9 \ud83d\ude00","e":"\\\\"}`,
		``: ``,
	} {
		if got := string(JSON([]byte(in))); got != want {
			t.Errorf("JSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzJSON: JSON gives what encoding/json's Compact gives, for any
// valid JSON.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"n": 1}`, `[1, "a \" b", {"x": [ ]}]`, `"\\"`, ` 12 `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, in); err != nil {
			t.Fatal(err)
		}
		if got := JSON(bytes.Clone(in)); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("JSON(%q) = %q, want %q", in, got, want.Bytes())
		}
	})
}

// BenchmarkJSON: the cost per row of compacting a payload as
// PostgreSQL writes a JSONB value out (a publish request of ~200 bytes).
func BenchmarkJSON(b *testing.B) {
	row := []byte(`{"data": {"id": 52, "text": "a message of some length, with spaces", "user": {"id": "u1", "name": "Alice"}, "tags": ["a", "b"]}, "channel": "chat:room", "idempotency_key": "row-52"}`)
	buf := make([]byte, len(row))
	b.SetBytes(int64(len(row)))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, row)
		_ = JSON(buf)
	}
}
