package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"port", "port", 0}, {"prot", "port", 1}, {"por", "port", 1},
		{"portt", "port", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}, {"ab", "ba", 1},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestUnknownKeySuggestion: an unknown key is warned about with the
// nearest known key at its own level, and without one when nothing is
// near.
func TestUnknownKeySuggestion(t *testing.T) {
	_, warnings, err := LoadBytes([]byte(`{
		"http_server": {"prot": 9000},
		"client": {"token": {"hmac_secret_kye": "x"}, "channel_limt": 5},
		"channnel": {},
		"zzzzzzzz": 1
	}`), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{
		`unknown key "http_server.prot" ignored (did you mean "port"?)`,
		`unknown key "client.token.hmac_secret_kye" ignored (did you mean "hmac_secret_key"?)`,
		`unknown key "client.channel_limt" ignored (did you mean "channel_limit"?)`,
		`unknown key "channnel" ignored (did you mean "channel"?)`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	for _, w := range warnings {
		if strings.Contains(w, "zzzzzzzz") && strings.Contains(w, "did you mean") {
			t.Errorf("a key near nothing got a suggestion: %s", w)
		}
	}
	if got := didYouMean(reflect.TypeOf(HTTPServer{}), "port"); got != ` (did you mean "port"?)` {
		t.Errorf("didYouMean = %q", got)
	}
}
