package loadtest

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// progress prints a line a second: the elapsed time and what the
// current phase says about itself.
type progress struct {
	w     io.Writer
	start time.Time

	mu   sync.Mutex
	line func(elapsed time.Duration) string

	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
}

func startProgress(w io.Writer, start time.Time) *progress {
	p := &progress{w: w, start: start, stopCh: make(chan struct{}), done: make(chan struct{})}
	if w == nil {
		close(p.done)
		return p
	}
	go p.loop()
	return p
}

// set makes line describe the current phase.
func (p *progress) set(line func(elapsed time.Duration) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line = line
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stopCh:
			return
		case <-t.C:
			p.print()
		}
	}
}

func (p *progress) print() {
	p.mu.Lock()
	line := p.line
	p.mu.Unlock()
	if line == nil {
		return
	}
	el := time.Since(p.start)
	fmt.Fprintf(p.w, "%6.1fs  %s\n", el.Seconds(), line(el))
}

// note prints msg at once, on a line of its own.
func (p *progress) note(msg string) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "%6.1fs  %s\n", time.Since(p.start).Seconds(), msg)
}

func (p *progress) stop() {
	p.stopOnce.Do(func() { close(p.stopCh) })
	<-p.done
}

// rateMeter turns a running total into a per-second rate between calls.
type rateMeter struct {
	last  int64
	lastT time.Time
}

func newRateMeter() *rateMeter { return &rateMeter{lastT: time.Now()} }

func (m *rateMeter) rate(total int64) float64 {
	now := time.Now()
	var r float64
	if dt := now.Sub(m.lastT).Seconds(); dt > 0 {
		r = float64(total-m.last) / dt
	}
	m.last, m.lastT = total, now
	return r
}

// count formats n with thousands separators.
func count[T int | int64 | uint64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func countf(f float64) string { return count(int64(f + 0.5)) }

// bytesIEC formats a byte count in KiB, MiB or GiB.
func bytesIEC(b float64) string {
	switch {
	case b >= 1<<30 || b <= -(1<<30):
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20 || b <= -(1<<20):
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10 || b <= -(1<<10):
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// micros formats a duration given in microseconds.
func micros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	}
	return fmt.Sprintf("%.0fµs", us)
}
