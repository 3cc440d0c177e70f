package jetstream

import (
	"strings"
	"testing"
)

func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "a", "a.b", "*", ">", " ", "%", "%25", "\x00", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ch string) {
		tok := token(ch)
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, ". \t\r\n*>") {
			t.Fatalf("token(%q) = %q is not one subject token", ch, tok)
		}
		for i := 0; i < len(tok); i++ {
			if tok[i] < 0x21 || tok[i] > 0x7e {
				t.Fatalf("token(%q) = %q has byte %#x", ch, tok, tok[i])
			}
		}
		back, ok := channelOf(tok)
		if !ok || back != ch {
			t.Fatalf("channelOf(token(%q)) = %q, %v", ch, back, ok)
		}
	})
}
