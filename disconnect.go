package gyre

import "fmt"

// Disconnect is the reason a connection is closed: a WebSocket close code
// and reason, or a disconnect push on other transports. Codes 3000–3499 and
// 4000–4499 tell the client to reconnect, 3500–3999 and 4500–4999 not to;
// 4000–4999 are free for applications.
type Disconnect struct {
	Code   uint32
	Reason string
}

var _ error = (*Disconnect)(nil)

func (d *Disconnect) Error() string {
	return fmt.Sprintf("gyre: disconnect %d: %s", d.Code, d.Reason)
}

// Reconnect reports whether a client should reconnect after d.
func (d *Disconnect) Reconnect() bool {
	c := d.Code
	return (c >= 3000 && c < 3500) || (c >= 4000 && c < 4500)
}

// Disconnects of the client protocol.
var (
	DisconnectConnectionClosed  = &Disconnect{Code: 3000, Reason: "connection closed"}
	DisconnectShutdown          = &Disconnect{Code: 3001, Reason: "shutdown"}
	DisconnectServerError       = &Disconnect{Code: 3004, Reason: "internal server error"}
	DisconnectExpired           = &Disconnect{Code: 3005, Reason: "expired"}
	DisconnectSubExpired        = &Disconnect{Code: 3006, Reason: "subscription expired"}
	DisconnectSlow              = &Disconnect{Code: 3008, Reason: "slow"}
	DisconnectWriteError        = &Disconnect{Code: 3009, Reason: "write error"}
	DisconnectInsufficientState = &Disconnect{Code: 3010, Reason: "insufficient state"}
	DisconnectForceReconnect    = &Disconnect{Code: 3011, Reason: "force reconnect"}
	DisconnectNoPong            = &Disconnect{Code: 3012, Reason: "no pong"}
	DisconnectTooManyRequests   = &Disconnect{Code: 3013, Reason: "too many requests"}
	DisconnectStateInvalidated  = &Disconnect{Code: 3014, Reason: "state invalidated"}
	DisconnectInvalidToken      = &Disconnect{Code: 3500, Reason: "invalid token"}
	DisconnectBadRequest        = &Disconnect{Code: 3501, Reason: "bad request"}
	DisconnectStale             = &Disconnect{Code: 3502, Reason: "stale"}
	DisconnectForceNoReconnect  = &Disconnect{Code: 3503, Reason: "force disconnect"}
	DisconnectConnectionLimit   = &Disconnect{Code: 3504, Reason: "connection limit"}
	DisconnectChannelLimit      = &Disconnect{Code: 3505, Reason: "channel limit"}
	DisconnectBadProtocol       = &Disconnect{Code: 3506, Reason: "inappropriate protocol"}
	DisconnectPermissionDenied  = &Disconnect{Code: 3507, Reason: "permission denied"}
	DisconnectNotAvailable      = &Disconnect{Code: 3508, Reason: "not available"}
	DisconnectTooManyErrors     = &Disconnect{Code: 3509, Reason: "too many errors"}
)

// Disconnects of the WebSocket transports for a client whose frames break
// RFC 6455, with that RFC's status codes: the frame layer refuses them
// before any command is decoded. Their codes are outside the protocol's
// ranges, so Reconnect reports false; the SDKs decide by themselves
// (docs/transports.md has what each one does).
var (
	DisconnectProtocolError  = &Disconnect{Code: 1002, Reason: "protocol error"}
	DisconnectInvalidPayload = &Disconnect{Code: 1007, Reason: "invalid frame payload data"}
	DisconnectMessageTooBig  = &Disconnect{Code: 1009, Reason: "message too big"}
)

// Unsubscribe codes sent in unsubscribe pushes. 2500 and above make the
// client resubscribe.
const (
	UnsubscribeCodeClient            uint32 = 0
	UnsubscribeCodeDisconnect        uint32 = 1
	UnsubscribeCodeServer            uint32 = 2000
	UnsubscribeCodeInsufficientState uint32 = 2500
	UnsubscribeCodeExpired           uint32 = 2501
	UnsubscribeCodeStateInvalidated  uint32 = 2502
)
