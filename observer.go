package gyre

import "time"

// Observer receives measurements of the engine's work, for metrics. Its
// methods are called on hot paths: they must be fast, must not block and
// must be safe for concurrent use. Counts come in batches (one call per
// broadcast, not one per subscriber).
type Observer interface {
	// CommandReceived counts one client command by method ("connect",
	// "subscribe", ..., "pong").
	CommandReceived(method string)
	// MessagesSent counts messages queued to clients by kind
	// ("publication", "join", "leave", "reply", "push", "ping").
	MessagesSent(kind string, n int)
	// Broadcast measures one fan-out to the local subscribers of a channel.
	Broadcast(subscribers int, d time.Duration)
	// FrameWritten measures one write to a connection: how many messages
	// were coalesced into it and how many bytes it had.
	FrameWritten(messages, bytes int)
	// Disconnected counts a closed connection by disconnect code.
	Disconnected(code uint32)
}

// nopObserver is used when Config.Observer is nil.
type nopObserver struct{}

func (nopObserver) CommandReceived(string)       {}
func (nopObserver) MessagesSent(string, int)     {}
func (nopObserver) Broadcast(int, time.Duration) {}
func (nopObserver) FrameWritten(int, int)        {}
func (nopObserver) Disconnected(uint32)          {}
