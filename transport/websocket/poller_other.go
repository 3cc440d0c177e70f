//go:build !linux

package websocket

// Poller is not implemented on this system: NewPoller fails and
// [Conn.ServeReads] reads every connection with a goroutine of its own.
type Poller struct{}

// NewPoller returns ErrPollUnsupported on this system.
func NewPoller() (*Poller, error) { return nil, ErrPollUnsupported }

// Close does nothing.
func (p *Poller) Close() error { return nil }

// Len is always zero.
func (p *Poller) Len() int { return 0 }

func (p *Poller) nextGen() uint32 { return 0 }

func (p *Poller) arm(*pollReg) error { return ErrPollUnsupported }

func (p *Poller) remove(*pollReg) {}
