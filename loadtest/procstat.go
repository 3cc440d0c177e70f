package loadtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat; Linux
// fixes it at 100 on every architecture Go supports.
const clockTicks = 100

// procSample is a process's resident memory and CPU time at one moment.
type procSample struct {
	RSS int64 // bytes
	CPU time.Duration
}

// readProc samples process pid from /proc.
func readProc(pid int) (procSample, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	cpu, err := readCPU(dir + "/stat")
	if err != nil {
		return procSample{}, err
	}
	rss, err := readRSS(dir + "/status")
	if err != nil {
		return procSample{}, err
	}
	return procSample{RSS: rss, CPU: cpu}, nil
}

func selfCPU() (time.Duration, error) { return readCPU("/proc/self/stat") }

// readCPU returns utime+stime from a stat file. The command name in
// parentheses may hold spaces and parentheses, so fields are counted
// from the last ')'.
func readCPU(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("loadtest: %w", err)
	}
	return parseStatCPU(b)
}

func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("loadtest: stat: no command name")
	}
	// After the name: state(3) ppid pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime(14) stime(15).
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, errors.New("loadtest: stat: too few fields")
	}
	ut, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	st, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("loadtest: stat: %w", err)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

func readRSS(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("loadtest: %w", err)
	}
	return parseStatusRSS(b)
}

func parseStatusRSS(b []byte) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("loadtest: status: odd VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("loadtest: status: %w", err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("loadtest: status: no VmRSS")
}
