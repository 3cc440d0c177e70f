package gyre

import "testing"

// TestInterruptOrder: a subscription whose delivery had a gap is closed
// and its client told at once when it is active; when it is still
// pending (its subscribe result not yet out) it is told only at
// activation, after the result, and what it held is dropped; a closed one
// is left alone.
func TestInterruptOrder(t *testing.T) {
	told := make(chan string, 3)
	active := &subscription{}
	active.state.Store(subActive)
	if !active.interrupt(func() { told <- "active" }) {
		t.Error("interrupt of an active subscription: not told")
	}
	if got := <-told; got != "active" || active.state.Load() != subClosed {
		t.Errorf("active subscription: told %q, state %d; want told and closed", got, active.state.Load())
	}

	pending := &subscription{held: []heldMessage{{offset: 1, msg: []byte("x")}}}
	if !pending.interrupt(func() { told <- "pending" }) {
		t.Error("interrupt of a pending subscription: not told")
	}
	select {
	case got := <-told:
		t.Fatalf("%s told before its subscribe result", got)
	default:
	}
	pending.activate(0)
	if got := <-told; got != "pending" || pending.state.Load() != subClosed || pending.held != nil {
		t.Errorf("pending subscription at activation: told %q, state %d, held %d; want told, closed, nothing held", got, pending.state.Load(), len(pending.held))
	}

	closed := &subscription{}
	closed.state.Store(subClosed)
	if closed.interrupt(func() { told <- "closed" }) {
		t.Error("interrupt of a closed subscription reports telling")
	}
	closed.activate(0)
	select {
	case got := <-told:
		t.Errorf("%s subscription told", got)
	default:
	}
}
