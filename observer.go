package gyre

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Observer receives measurements of the engine's work, for metrics. Its
// methods are called on hot paths: they must be fast, must not block and
// must be safe for concurrent use. Counts come in batches (one call per
// fan-out and transport, not one per subscriber). Every label-like string
// the engine passes comes from a small set, so that an implementation can
// label metrics with it; embed NopObserver to implement only some methods
// and keep compiling when methods are added.
type Observer interface {
	// Connected counts a connection whose connect succeeded.
	Connected(c ConnInfo)
	// Disconnected counts a closed connection by disconnect code (3000:
	// the peer went away); connected tells whether Connected counted it.
	Disconnected(c ConnInfo, code uint32, connected bool)
	// CommandReceived counts one command read from a client: its method
	// ("connect", "subscribe", ..., "send", "ping", or "pong" for the
	// empty command that answers a server ping) and its size in bytes,
	// its share of the frame that carried it.
	CommandReceived(transport, method string, size int)
	// CommandDone measures a command from its arrival until its reply was
	// queued (or, for send, until the message handler returned). Pongs are
	// not measured.
	CommandDone(method string, d time.Duration)
	// CommandFailed counts a command answered with an error, by code.
	CommandFailed(method string, code uint32)
	// MessagesSent counts n messages of one kind queued to clients of one
	// transport, size bytes in all (a node's 15th and later transport
	// names are told as "other"). The kind is the protocol's frame type:
	// "push_publication", "push_join", "push_leave", "push_unsubscribe",
	// "push_subscribe", "push_message", "push_disconnect", "push_connect",
	// "push_refresh", "server_ping", or the method of the command a reply
	// answers.
	MessagesSent(transport, kind string, n, size int)
	// Broadcast measures one fan-out to the local subscribers of a channel.
	Broadcast(subscribers int, d time.Duration)
	// PublicationsFiltered counts publications a tag filter kept from
	// subscribers in one fan-out (a publication counts once per subscriber
	// it skipped).
	PublicationsFiltered(n int)
	// FrameWritten measures one write to a connection: how many messages
	// were coalesced into it and how many bytes it had.
	FrameWritten(messages, bytes int)
	// Subscribed and Unsubscribed count the start and the end of a
	// client's subscription; server tells that the server ended it and
	// told the client so (an unsubscribe push with code).
	Subscribed(c ConnInfo)
	Unsubscribed(c ConnInfo, code uint32, server bool)
	// Recovered counts a subscription that asked to recover what it
	// missed: whether it did, and how many publications it was given.
	Recovered(recovered bool, publications int)
	// BrokerSent counts n messages the node handed to its broker, and
	// BrokerReceived n messages the broker delivered to the node, by kind:
	// "publication", "join", "leave" or "control".
	BrokerSent(kind string, n int)
	BrokerReceived(kind string, n int)
	// BrokerFailed counts a broker operation that failed: "publish",
	// "subscribe", "unsubscribe", "history" or "presence".
	BrokerFailed(op string)
	// BrokerBehind tells that this node's broker delivery fell behind
	// (true) or caught up (false); see backpressure.go.
	BrokerBehind(behind bool)
	// PublishHeld measures a publish (of up to 256 items) held back while
	// a node was behind: how long it waited, and whether it was refused
	// with 111 at the end.
	PublishHeld(d time.Duration, refused bool)
	// SubscriptionsLost counts subscribers of channels whose broker
	// subscription was interrupted (publications may have been missed):
	// told were told so (unsubscribed with 2500 to recover, or
	// disconnected with 3010), atMostOnce were not (channels without
	// history or position, whose delivery is at most once).
	SubscriptionsLost(told, atMostOnce int)
}

// ConnInfo is what an Observer is told about a connection: values from
// small sets, fit to label metrics with.
type ConnInfo struct {
	// Transport is the name of the connection's transport.
	Transport string
	// Client is the name the client's SDK gave at connect when it is one
	// of the official SDKs' ("js", "go", "python", "dart", "swift",
	// "java"), "unregistered" for any other name and "unnamed" for none: a
	// name is free text, and a label of it would grow without bound.
	Client string
	// Versioned tells that the client gave its SDK's version (free text
	// too, so not passed on).
	Versioned bool
}

// knownClientNames are the names the official SDKs give at connect;
// ConnInfo.Client passes them on as they are.
var knownClientNames = []string{"js", "go", "python", "dart", "swift", "java"}

// clientNames are the values of ConnInfo.Client; a client holds the index
// of its own (Client.sdk).
var clientNames = append([]string{"unnamed", "unregistered"}, knownClientNames...)

// clientNameIndex is the index in clientNames of a connect's name.
func clientNameIndex(name string) uint8 {
	if name == "" {
		return 0
	}
	for i, known := range knownClientNames {
		if name == known {
			return uint8(i + 2)
		}
	}
	return 1
}

// NopObserver is an Observer that measures nothing. Embed it in an
// Observer that needs only some of the methods. Config.Observer nil uses
// it.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Connected(ConnInfo)                    {}
func (NopObserver) Disconnected(ConnInfo, uint32, bool)   {}
func (NopObserver) CommandReceived(string, string, int)   {}
func (NopObserver) CommandDone(string, time.Duration)     {}
func (NopObserver) CommandFailed(string, uint32)          {}
func (NopObserver) MessagesSent(string, string, int, int) {}
func (NopObserver) Broadcast(int, time.Duration)          {}
func (NopObserver) PublicationsFiltered(int)              {}
func (NopObserver) FrameWritten(int, int)                 {}
func (NopObserver) Subscribed(ConnInfo)                   {}
func (NopObserver) Unsubscribed(ConnInfo, uint32, bool)   {}
func (NopObserver) Recovered(bool, int)                   {}
func (NopObserver) BrokerSent(string, int)                {}
func (NopObserver) BrokerReceived(string, int)            {}
func (NopObserver) BrokerFailed(string)                   {}
func (NopObserver) BrokerBehind(bool)                     {}
func (NopObserver) PublishHeld(time.Duration, bool)       {}
func (NopObserver) SubscriptionsLost(int, int)            {}

// Transport slots: a fan-out counts what it queued per transport in an
// array indexed by the client's slot, and tells the Observer once per
// transport. Slots are given to transport names as they appear; names
// past maxTransportSlots-2 share the slot "other", and the last slot is
// for hidden clients (Node.Tail), which no metric sees.
const (
	maxTransportSlots = 16
	hiddenSlot        = maxTransportSlots - 1
	otherSlot         = maxTransportSlots - 2
)

// transportSlots numbers the transport names of a node's clients.
type transportSlots struct {
	mu    sync.Mutex
	names atomic.Pointer[[]string] // copy on write, index = slot
}

// slot returns the slot of transport name, giving it one if it has none.
func (t *transportSlots) slot(name string) uint8 {
	if p := t.names.Load(); p != nil {
		for i, n := range *p {
			if n == name {
				return uint8(i)
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	if p := t.names.Load(); p != nil {
		names = *p
	}
	for i, n := range names {
		if n == name {
			return uint8(i)
		}
	}
	if len(names) >= otherSlot {
		return otherSlot
	}
	grown := append(names[:len(names):len(names)], name)
	t.names.Store(&grown)
	return uint8(len(grown) - 1)
}

// name is the transport name of a slot.
func (t *transportSlots) name(slot int) string {
	if slot == otherSlot {
		return "other"
	}
	return (*t.names.Load())[slot]
}

// deliveries tallies what a fan-out queued, per transport slot, and the
// publications tag filters kept back, until report tells the Observer.
type deliveries struct {
	n, size  [maxTransportSlots]int
	used     uint16 // a bit per slot with a count
	filtered int
}

func (d *deliveries) add(slot uint8, n, size int) {
	slot &= maxTransportSlots - 1 // a slot is below it; this spares the bounds checks
	d.n[slot] += n
	d.size[slot] += size
	d.used |= 1 << slot
}

// report tells n's Observer what was tallied as messages of kind, and
// clears the tally.
func (d *deliveries) report(n *Node, kind string) {
	for used := d.used &^ (1 << hiddenSlot); used != 0; used &= used - 1 {
		slot := bits.TrailingZeros16(used)
		n.obs.MessagesSent(n.transports.name(slot), kind, d.n[slot], d.size[slot])
	}
	for used := d.used; used != 0; used &= used - 1 {
		slot := bits.TrailingZeros16(used)
		d.n[slot], d.size[slot] = 0, 0
	}
	d.used = 0
	if d.filtered > 0 {
		n.obs.PublicationsFiltered(d.filtered)
		d.filtered = 0
	}
}
