package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pidList names the processes whose CPU time a sync is charged with.
type pidList []namedPID

type namedPID struct {
	name string
	pid  int
}

func (l *pidList) String() string { return fmt.Sprint(*l) }

func (l *pidList) Set(v string) error {
	name, p, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want NAME=PID, got %q", v)
	}
	pid, err := strconv.Atoi(p)
	if err != nil {
		return fmt.Errorf("pid %q: %w", p, err)
	}
	*l = append(*l, namedPID{name, pid})
	return nil
}

type cpuDelta struct {
	name    string
	seconds float64
}

// sample reads each process's utime+stime in seconds; a process that
// cannot be read counts as -1 and is left out of since.
func (l pidList) sample() []float64 {
	out := make([]float64, len(l))
	for i, p := range l {
		out[i] = cpuSeconds(p.pid)
	}
	return out
}

func (l pidList) since(before []float64) []cpuDelta {
	var out []cpuDelta
	for i, now := range l.sample() {
		if now < 0 || before[i] < 0 {
			continue
		}
		out = append(out, cpuDelta{l[i].name, now - before[i]})
	}
	return out
}

// userHZ is the unit of /proc/PID/stat's times on Linux.
const userHZ = 100

func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name may hold spaces; the fields after it are fixed.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (ut + st) / userHZ
}
