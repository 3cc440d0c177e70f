package loadtest

import "fmt"

// serverWatch samples the server processes when there are any to
// watch: one per node (URL), then any others.
type serverWatch struct {
	pids []int
	urls []string
	errs *errorSamples
}

// serverSnap is every watched process at one moment, in the order of
// the pids; nil when there is none to watch or one could not be read.
type serverSnap []procSample

// sum is the processes' memory and CPU time together.
func (s serverSnap) sum() procSample {
	var sum procSample
	for _, p := range s {
		sum.RSS += p.RSS
		sum.CPU += p.CPU
	}
	return sum
}

// snap samples every server process; nil when there is none or one
// cannot be read (the reason goes to the run's errors).
func (s serverWatch) snap() serverSnap {
	if len(s.pids) == 0 {
		return nil
	}
	out := make(serverSnap, len(s.pids))
	for i, pid := range s.pids {
		p, err := readProc(pid)
		if err != nil {
			s.errs.add(fmt.Sprintf("server pid %d: %v", pid, err))
			return nil
		}
		out[i] = p
	}
	return out
}

// serverMoments are the samples a scenario took: memory before
// connecting, after connecting and at the end (afterOpen may be nil),
// and the CPU time over the measured phase, from cpu0 to cpu1, which
// lasted seconds.
type serverMoments struct {
	before, afterOpen, end serverSnap
	cpu0, cpu1             serverSnap
	seconds                float64
}

// result is the server summary of the moments, nil unless every sample
// but afterOpen was taken. Several processes are summed, and each is
// reported in Nodes as well.
func (s serverWatch) result(m serverMoments) *ServerResult {
	n := len(s.pids)
	if n == 0 || len(m.before) != n || len(m.end) != n || len(m.cpu0) != n || len(m.cpu1) != n {
		return nil
	}
	sr := &ServerResult{PIDs: s.pids}
	if n == 1 {
		sr = &ServerResult{PID: s.pids[0]}
	}
	for i, pid := range s.pids {
		node := ServerNode{
			PID:        pid,
			RSSBefore:  m.before[i].RSS,
			RSSEnd:     m.end[i].RSS,
			CPUSeconds: (m.cpu1[i].CPU - m.cpu0[i].CPU).Seconds(),
		}
		if i < len(s.urls) {
			node.URL = s.urls[i]
		}
		if len(m.afterOpen) == n {
			node.RSSAfterOpen = m.afterOpen[i].RSS
		}
		node.CPUPercent = percent(node.CPUSeconds, m.seconds)
		sr.RSSBefore += node.RSSBefore
		sr.RSSAfterOpen += node.RSSAfterOpen
		sr.RSSEnd += node.RSSEnd
		sr.CPUSeconds += node.CPUSeconds
		if n > 1 {
			sr.Nodes = append(sr.Nodes, node)
		}
	}
	sr.CPUPercent = percent(sr.CPUSeconds, m.seconds)
	return sr
}
