package loadtest

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "1234 (gyre) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 8 0 1 2 3", 3800 * time.Millisecond, false},
		{"name with spaces and parens", "1 (a) (b c) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0", 100 * time.Millisecond, false},
		{"no name", "1 gyre S 1", 0, true},
		{"short", "1 (gyre) S 1 2 3", 0, true},
		{"not a number", "1 (gyre) S 1 1 1 0 -1 0 0 0 0 0 x 3", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseStatCPU = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseStatusRSS(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"found", "Name:\tgyre\nVmPeak:\t  9999 kB\nVmRSS:\t   2048 kB\nThreads: 8\n", 2048 << 10, false},
		{"missing", "Name:\tgyre\n", 0, true},
		{"odd unit", "VmRSS:\t 2 MB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatusRSS([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseStatusRSS = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestReadProc(t *testing.T) {
	s, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 {
		t.Fatalf("RSS %d of this process", s.RSS)
	}
	if _, err := readProc(-1); err == nil {
		t.Fatal("no error for a missing process")
	}
}
