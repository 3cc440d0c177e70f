package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestFilterCommand(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"filter", `ticker in ("GOOG", "AAPL")`}, `{"key":"ticker","cmp":"in","vals":["GOOG","AAPL"]}`, ""},
		{[]string{"filter", `!(a == "1")`}, `{"op":"not","nodes":[{"key":"a","cmp":"eq","val":"1"}]}`, ""},
		{[]string{"filter", "-format", `{"op":"and","nodes":[{"key":"a","cmp":"gt","val":"4"},{"key":"b","cmp":"nex"}]}`}, `a > 4 && !exists(b)`, ""},
		{[]string{"filter", `a ==`}, "", "offset 4"},
		{[]string{"filter", "-format", `{"op":"not"}`}, "", "invalid filter"},
		{[]string{"filter"}, "", "give one expression"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(tt.args, &out, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out.String()); got != tt.want {
				t.Fatalf("got %s\nwant %s", got, tt.want)
			}
		})
	}
}
