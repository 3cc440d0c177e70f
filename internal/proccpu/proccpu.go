// Package proccpu reads the CPU time of processes named on a command
// line (NAME=PID), for the benchmark commands that charge a measurement
// with the CPU the server processes spent meanwhile.
package proccpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PIDList names the processes whose CPU time a measurement is charged
// with; it is a flag.Value of repeated NAME=PID.
type PIDList []namedPID

type namedPID struct {
	name string
	pid  int
}

func (l *PIDList) String() string { return fmt.Sprint(*l) }

func (l *PIDList) Set(v string) error {
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

// Delta is the CPU seconds one process spent.
type Delta struct {
	Name    string
	Seconds float64
}

// Sample reads each process's utime+stime in seconds; a process that
// cannot be read counts as -1 and is left out of since.
func (l PIDList) Sample() []float64 {
	out := make([]float64, len(l))
	for i, p := range l {
		out[i] = Seconds(p.pid)
	}
	return out
}

// Since is what each process spent since before (a Sample).
func (l PIDList) Since(before []float64) []Delta {
	var out []Delta
	for i, now := range l.Sample() {
		if now < 0 || before[i] < 0 {
			continue
		}
		out = append(out, Delta{l[i].name, now - before[i]})
	}
	return out
}

// userHZ is the unit of /proc/PID/stat's times on Linux.
const userHZ = 100

// Seconds is the utime+stime of process pid, -1 when it cannot be read.
func Seconds(pid int) float64 {
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
