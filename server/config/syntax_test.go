package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyntaxErrorPosition: a file that does not parse is reported as
// FILE:LINE:COLUMN, the place of the fault, once.
func TestSyntaxErrorPosition(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, content, want string
	}{
		{"JSON stray comma", "c.json", "{\n  \"client\": {\n    \"channel_limit\": 5,,\n  }\n}\n", "c.json:3:24: parse JSON: invalid character ','"},
		{"JSON truncated", "c.json", "{\n  \"log\": ", "c.json:2:10: parse JSON: unexpected EOF"},
		{"JSON data after", "c.json", "{}\n  {}", "c.json:2:3: parse JSON: data after the top-level value"},
		{"JSON first byte", "c.json", "x", "c.json:1:1: parse JSON: invalid character 'x'"},
		{"YAML", "c.yaml", "a: 1\nb:\n  c: 1\n d: 2\n", "c.yaml:3: parse YAML: did not find expected key"},
		{"TOML", "c.toml", "[log]\nlevel = = 1\n", "c.toml:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.file)
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(p)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Load error %v (%T), want a *SyntaxError", err, err)
			}
			msg := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
			if !strings.HasPrefix(msg, tt.want) {
				t.Fatalf("error %q, want it to start with %q", msg, tt.want)
			}
			if strings.Count(msg, "parse ") != 1 || strings.Contains(msg, tt.file+":"+tt.file) {
				t.Fatalf("error %q repeats itself", msg)
			}
		})
	}
	t.Run("bytes", func(t *testing.T) {
		_, _, err := LoadBytes([]byte("{\n,"), FormatJSON)
		if err == nil || err.Error() != "config:2:1: parse JSON: invalid character ',' looking for beginning of object key string" {
			t.Fatalf("error %v", err)
		}
	})
}
