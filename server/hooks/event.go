package hooks

import (
	"encoding/json"
	"fmt"
)

// Kind says what an event is about: a channel or a user.
type Kind uint8

const (
	// KindChannel events are about a channel: Key is the channel, Type
	// is TypeOccupied or TypeVacated.
	KindChannel Kind = 1
	// KindUser events are about a user: Key is the user ID, Type is
	// TypeOnline or TypeOffline.
	KindUser Kind = 2
)

// String is the kind's name in metrics and logs: "channel" or "user".
func (k Kind) String() string {
	switch k {
	case KindChannel:
		return "channel"
	case KindUser:
		return "user"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// The types of events.
const (
	TypeOccupied = "occupied"
	TypeVacated  = "vacated"
	TypeOnline   = "online"
	TypeOffline  = "offline"
)

// Event is one event for the backend.
type Event struct {
	// ID is the same each time the event is handed over again, so that
	// the backend can drop duplicates.
	ID   string
	Kind Kind
	// Key is the channel (KindChannel) or the user ID (KindUser).
	Key  string
	Type string
	// TimeMs is when the change happened, in Unix milliseconds.
	TimeMs int64
	// Info is the connection info of a user's first connection (user
	// events only). It need not be JSON: over HTTP, info that is not
	// goes base64-encoded in b64info.
	Info json.RawMessage
}

// batchKind is the kind of every event of a batch; a batch mixing kinds
// is an error, as each kind goes to its own call.
func batchKind(events []Event) (Kind, error) {
	if len(events) == 0 {
		return 0, fmt.Errorf("hooks: empty batch")
	}
	k := events[0].Kind
	if k != KindChannel && k != KindUser {
		return 0, fmt.Errorf("hooks: event %q: unknown kind %d", events[0].ID, k)
	}
	for _, e := range events[1:] {
		if e.Kind != k {
			return 0, fmt.Errorf("hooks: batch mixes %s and %s events", k, e.Kind)
		}
	}
	return k, nil
}
