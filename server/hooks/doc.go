// Package hooks delivers event hooks to application backends: channel
// state events ("occupied" when a channel gets its first subscriber
// anywhere in the cluster, "vacated" when the last one leaves everywhere)
// and user status events ("online" when a user's first connection opens,
// "offline" when the last one closes), over HTTP (JSON) or gRPC.
//
// A [Sender] sends one batch in one request; a [Queue] per backend
// endpoint batches the events handed to [Queue.Deliver], sends them one
// request at a time, and sends a batch again until the backend accepts it
// or its events are dropped.
//
// # HTTP requests
//
// Each batch is a POST to the endpoint with Content-Type
// application/json, the configured static headers and, when a secret is
// set, the signature header (see below). A batch holds events of one
// kind. Channel events (Centrifugo PRO's shape, plus "id"):
//
//	{"events":[{"id":"7f3a-12","channel":"chat:index","type":"occupied","time_ms":1697206286533}]}
//
// User events:
//
//	{"events":[{"id":"7f3a-13","user":"42","type":"online","time_ms":1697206286533,"info":{"name":"Alice"}}]}
//
// The fields (Gyre writes them in this order; a backend should not rely
// on it):
//
//   - id (string): the event's ID, the same each time the event is sent
//     again, so that a backend can drop an event whose ID it has seen.
//   - channel (string, channel events) or user (string, user events): the
//     channel, or the user ID (never empty: anonymous connections make no
//     user events).
//   - type (string): "occupied" or "vacated"; "online" or "offline".
//     Further types may come: a backend ignores those it does not know.
//   - time_ms (integer): when the change happened, Unix milliseconds.
//   - info (JSON, user events): the connection info of the user's first
//     connection, from its token or the connect proxy, as it was given;
//     absent when there was none. When that info is not JSON, or the
//     proxy's binary encoding is on, "b64info" (a string, standard base64
//     with padding) stands in its place.
//
// An endpoint that gets both kinds tells them apart by the "channel" or
// "user" key (or the type).
//
// The backend answers status 200 with a JSON object: {} or {"result":{}}
// accepts the batch; {"error":{"code":1000,"message":"...","temporary":true}}
// refuses it, and it is sent again. Any other status, a reply that is not
// a JSON object, or no reply within the timeout fails the request too.
//
// # Signature
//
// With a secret set, every HTTP request carries
//
//	X-Gyre-Signature: t=<unix seconds>,v1=<hex>
//
// where <unix seconds> is the time the request was signed, in decimal,
// and <hex> is the lower-case hexadecimal HMAC-SHA256, keyed with the
// secret, of the bytes "<t>.<body>": the t value exactly as it appears in
// the header, a dot, then the raw request body as received (before any
// JSON parsing or re-encoding). A backend verifies a request by
// splitting the header on commas into key=value pairs, computing the HMAC
// over its own t and body, comparing it with v1 in constant time, and
// refusing a t further than a few minutes from its clock, so that a
// captured request cannot be replayed later. Keys other than t and v1
// are to be ignored: a later scheme may be sent beside v1. Every attempt
// is signed anew, with its own t. [VerifySignature] does all of this for
// a backend written in Go.
//
// # gRPC requests
//
// Channel events go to NotifyChannelState of Centrifugo's proxy service
// (centrifugal.centrifugo.proxy.CentrifugoProxy, server/proxy/proxypb),
// whose ChannelEvent carries Gyre's id in field 4; user events go to
// NotifyUserStatus of Gyre's gyre.hooks.v1.UserStatus service
// (server/hooks/hookspb). The static headers go as metadata. A response
// whose error is set, or any status but OK, fails the request. gRPC
// requests are not signed: the connection is authenticated instead (TLS,
// per-call credentials).
//
// # Delivery
//
// A Queue sends the oldest events first, one request at a time, so that
// the backend gets them in the order they were delivered to the queue
// (per channel and per user included). A request that fails is sent
// again after a back-off, doubling from QueueConfig.MinBackoff to
// MaxBackoff with jitter; it starts with the same events, and may hold
// fewer (dropped meanwhile) or more (queued meanwhile, up to MaxBatch).
// Delivery is at least once: a backend that took a batch but whose answer
// was lost gets the same events again, with the same IDs.
//
// Deliver returns once each of its events is delivered or dropped, so
// that a caller holding the events in a durable log advances past them
// only then. Events are dropped when the queue is full (MaxEvents) or
// when they waited MaxAge: the backend stayed down too long. Each drop is
// counted ([Observer.Dropped], [Queue.Recent]); the log gets one line
// when dropping starts and one when it ends (at the next delivery),
// however many events were dropped in between.
//
// # Metrics and the admin UI
//
// An [Observer] is told of every delivered batch (its size and
// duration), failed request (and why), dropped event and change of the
// queue's length. [Queue.Recent] returns the latest events delivered or
// dropped and the latest failures, from fixed-size rings.
//
// # Concurrency
//
// Sender, Queue and the functions of the package are safe for concurrent
// use. A Queue has one goroutine, started by NewQueue and ended by Close.
package hooks
