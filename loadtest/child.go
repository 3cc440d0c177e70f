package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"time"
)

// A child process speaks JSON lines with its parent: on its standard
// input a spec, later a finish order; on its standard output its stats
// four times a second, a ready mark once every connection was tried, and
// the result.
type childMsg struct {
	Spec   *workerSpec   `json:"spec,omitempty"`
	Finish *finishOrder  `json:"finish,omitempty"`
	Stats  *workerStats  `json:"stats,omitempty"`
	Ready  bool          `json:"ready,omitempty"`
	Result *workerResult `json:"result,omitempty"`
}

type finishOrder struct {
	Published []uint64 `json:"published"`
}

const (
	statsInterval = 250 * time.Millisecond
	maxLine       = 16 << 20
	// childExitWait is how long a child may take to exit after its
	// result, and to answer a finish order, before it is killed.
	childExitWait = 30 * time.Second
)

// RunWorker is the body of a child process: it reads its share of the
// connections from in, holds them, and reports on out until told to
// finish, until in closes (its parent is gone), or until its lifetime
// runs out.
func RunWorker(ctx context.Context, in io.Reader, out io.Writer) error {
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64<<10), maxLine)
	var first childMsg
	if !lines.Scan() {
		return fmt.Errorf("loadtest: worker: no spec: %w", errOr(lines.Err(), io.ErrUnexpectedEOF))
	}
	if err := json.Unmarshal(lines.Bytes(), &first); err != nil || first.Spec == nil {
		return fmt.Errorf("loadtest: worker: bad spec: %w", errOr(err, errors.New("missing")))
	}
	ctx, cancel := context.WithTimeout(ctx, first.Spec.Lifetime)
	defer cancel()
	p := startPool(ctx, *first.Spec)
	w := &lineWriter{enc: json.NewEncoder(out)}
	stop := make(chan struct{})
	reporting := make(chan struct{})
	go func() {
		defer close(reporting)
		report(p, w, stop)
	}()
	order := make(chan finishOrder, 1)
	go readOrders(lines, order, cancel)
	var published []uint64
	select {
	case o := <-order:
		published = o.Published
	case <-ctx.Done():
	}
	res, err := p.finish(published)
	close(stop)
	<-reporting
	if err != nil {
		return err
	}
	res.CPUSeconds = childCPU()
	return w.send(childMsg{Result: &res})
}

func childCPU() float64 {
	cpu, _ := selfCPU()
	return cpu.Seconds()
}

func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// report sends stats until stop, and the ready mark when it is due.
func report(p *pool, w *lineWriter, stop <-chan struct{}) {
	t := time.NewTicker(statsInterval)
	defer t.Stop()
	ready := p.ready()
	for {
		select {
		case <-stop:
			return
		case <-ready:
			ready = nil
			s := p.stats()
			s.CPUSeconds = childCPU()
			_ = w.send(childMsg{Stats: &s, Ready: true})
		case <-t.C:
			s := p.stats()
			s.CPUSeconds = childCPU()
			_ = w.send(childMsg{Stats: &s})
		}
	}
}

// readOrders passes on the finish order; the end of input cancels.
func readOrders(lines *bufio.Scanner, order chan<- finishOrder, cancel context.CancelFunc) {
	for lines.Scan() {
		var m childMsg
		if json.Unmarshal(lines.Bytes(), &m) == nil && m.Finish != nil {
			order <- *m.Finish
			return
		}
	}
	cancel()
}

// lineWriter writes one JSON message per line from any goroutine.
type lineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *lineWriter) send(m childMsg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(m)
}

// child is a worker in a child process.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	log *slog.Logger

	mu     sync.Mutex
	last   workerStats
	result *workerResult

	readyOnce sync.Once
	readyCh   chan struct{}
	done      chan struct{} // its output ended
}

func startChild(command []string, spec workerSpec, log *slog.Logger) (*child, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = &logWriter{log: log}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("loadtest: child: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("loadtest: child: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: start child: %w", err)
	}
	c := &child{cmd: cmd, in: in, log: log, readyCh: make(chan struct{}), done: make(chan struct{})}
	go c.read(out)
	b, _ := json.Marshal(childMsg{Spec: &spec})
	if _, err := in.Write(append(b, '\n')); err != nil {
		c.kill()
		go func() { _ = cmd.Wait() }()
		return nil, fmt.Errorf("loadtest: child: send spec: %w", err)
	}
	return c, nil
}

func (c *child) read(out io.Reader) {
	defer close(c.done)
	defer c.readyOnce.Do(func() { close(c.readyCh) })
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 64<<10), maxLine)
	for lines.Scan() {
		var m childMsg
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			c.log.Warn("loadtest: child: bad line", "err", err)
			continue
		}
		c.mu.Lock()
		if m.Stats != nil {
			c.last = *m.Stats
		}
		if m.Result != nil {
			c.result = m.Result
		}
		c.mu.Unlock()
		if m.Ready {
			c.readyOnce.Do(func() { close(c.readyCh) })
		}
	}
}

func (c *child) ready() <-chan struct{} { return c.readyCh }

func (c *child) stats() workerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *child) finish(published []uint64) (workerResult, error) {
	b, _ := json.Marshal(childMsg{Finish: &finishOrder{Published: published}})
	_, _ = c.in.Write(append(b, '\n'))
	select {
	case <-c.done:
	case <-time.After(childExitWait):
		c.kill()
		go func() { _ = c.cmd.Wait() }()
		return workerResult{}, errors.New("loadtest: child did not finish")
	}
	c.in.Close()
	waited := make(chan error, 1)
	go func() { waited <- c.cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(childExitWait):
		c.kill()
		err = <-waited
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.result == nil {
		return workerResult{workerStats: c.last}, fmt.Errorf("loadtest: child ended without a result: %w", errOr(err, io.ErrUnexpectedEOF))
	}
	return *c.result, nil
}

func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	c.in.Close()
}

// logWriter logs what a child writes on its standard error (a panic,
// an early failure) line by line.
type logWriter struct {
	log     *slog.Logger
	mu      sync.Mutex
	pending []byte
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, b...)
	for {
		i := indexNewline(w.pending)
		if i < 0 {
			break
		}
		w.log.Warn("loadtest: child: " + string(w.pending[:i]))
		w.pending = w.pending[i+1:]
	}
	return len(b), nil
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}
