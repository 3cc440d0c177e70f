package admin

import (
	"net/http"

	"github.com/gyrehq/gyre/server/hooks"
)

// EventHookQueue is the state of the queue of one event hook proxy of a
// node, as Config.EventHooks reports it.
type EventHookQueue struct {
	// Name is the proxy's name in proxies[], or the key of a default
	// proxy ("channel.proxy.state", "client.proxy.user_status").
	Name string
	// Kinds are the kinds of events the proxy gets ("channel", "user");
	// Namespaces, those whose state events it gets ("" is the channels
	// without a namespace).
	Kinds      []string
	Namespaces []string
	// Length is the events waiting, the request in flight included.
	Length int
	// Delivered counts the events the backend took, Failed the requests
	// that failed (sent again), Dropped the events given up, since the
	// node started.
	Delivered, Failed, Dropped uint64
	// Recent are the latest events delivered or dropped and the latest
	// failures, newest first (hooks.Queue.Recent).
	Recent []hooks.Record
}

// eventHookJSON is an EventHookQueue in the route's reply.
type eventHookJSON struct {
	Name       string       `json:"name"`
	Kinds      []string     `json:"kinds"`
	Namespaces []string     `json:"namespaces"`
	Length     int          `json:"queue_length"`
	Delivered  uint64       `json:"delivered"`
	Failed     uint64       `json:"failed_requests"`
	Dropped    uint64       `json:"dropped"`
	Recent     []recordJSON `json:"recent"`
}

// recordJSON is a hooks.Record. An event's info is left out: it is the
// user's connection info, which the page has no use for.
type recordJSON struct {
	Time    int64  `json:"time_ms"`
	Outcome string `json:"outcome"`
	ID      string `json:"event_id"`
	Kind    string `json:"kind"`
	Channel string `json:"channel,omitempty"`
	User    string `json:"user,omitempty"`
	Type    string `json:"type"`
	// EventTime is when the change happened; Time, when the event was
	// delivered or dropped, or the request failed.
	EventTime int64  `json:"event_time_ms"`
	Batch     int    `json:"batch,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
}

func toRecordJSON(r hooks.Record) recordJSON {
	out := recordJSON{
		Time: r.Time.UnixMilli(), Outcome: r.Outcome.String(),
		ID: r.Event.ID, Kind: r.Event.Kind.String(), Type: r.Event.Type, EventTime: r.Event.TimeMs,
		Batch: r.Batch, Attempt: r.Attempt, Reason: r.Reason, Error: r.Error,
	}
	if r.Event.Kind == hooks.KindUser {
		out.User = r.Event.Key
	} else {
		out.Channel = r.Event.Key
	}
	return out
}

// eventHooks lists the event hook queues of this node as they are now.
// Each node reports its own: every node delivers the transitions it is
// handed, so each has its own counts and failures.
func (h *Handler) eventHooks(w http.ResponseWriter, r *http.Request) {
	list := []eventHookJSON{}
	if h.cfg.EventHooks != nil {
		for _, q := range h.cfg.EventHooks() {
			recent := make([]recordJSON, 0, len(q.Recent))
			for _, rec := range q.Recent {
				recent = append(recent, toRecordJSON(rec))
			}
			list = append(list, eventHookJSON{
				Name: q.Name, Kinds: nonNil(q.Kinds), Namespaces: nonNil(q.Namespaces), Length: q.Length,
				Delivered: q.Delivered, Failed: q.Failed, Dropped: q.Dropped, Recent: recent,
			})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"node_name": h.node.Name(), "event_hooks": list})
}

// nonNil makes a nil list [] in JSON rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
