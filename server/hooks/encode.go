package hooks

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/gyrehq/gyre/server/hooks/hookspb"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// The HTTP bodies are written by hand rather than through encoding/json
// or the proxies' reflection codec: a batch is a flat list of a few known
// fields, and appending them to one buffer costs a fraction of either.

// appendBody appends the JSON body of a batch of one kind (see the
// package documentation for its shape). b64 sends user info as b64info
// even when it is JSON.
func appendBody(b []byte, kind Kind, events []Event, b64 bool) []byte {
	b = append(b, `{"events":[`...)
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		e := &events[i]
		b = append(b, `{"id":`...)
		b = appendString(b, e.ID)
		if kind == KindChannel {
			b = append(b, `,"channel":`...)
		} else {
			b = append(b, `,"user":`...)
		}
		b = appendString(b, e.Key)
		b = append(b, `,"type":`...)
		b = appendString(b, e.Type)
		b = append(b, `,"time_ms":`...)
		b = strconv.AppendInt(b, e.TimeMs, 10)
		if kind == KindUser && len(e.Info) > 0 {
			if !b64 && json.Valid(e.Info) {
				b = append(b, `,"info":`...)
				b = append(b, e.Info...)
			} else {
				b = append(b, `,"b64info":"`...)
				b = base64.StdEncoding.AppendEncode(b, e.Info)
				b = append(b, '"')
			}
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// bodySize estimates the size of a batch's body, to allocate it once.
func bodySize(events []Event) int {
	n := 16
	for i := range events {
		e := &events[i]
		n += 64 + len(e.ID) + len(e.Key) + len(e.Type) + len(e.Info)*4/3
	}
	return n
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 bytes become
// U+FFFD, and U+2028 and U+2029 are escaped, as encoding/json does, so
// that the body is valid JSON (and JavaScript) whatever a channel name
// holds.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// channelRequest is the gRPC request of a batch of channel events.
func channelRequest(events []Event) *proxypb.NotifyChannelStateRequest {
	req := &proxypb.NotifyChannelStateRequest{Events: make([]*proxypb.ChannelEvent, len(events))}
	all := make([]proxypb.ChannelEvent, len(events))
	for i := range events {
		e := &events[i]
		all[i] = proxypb.ChannelEvent{TimeMs: e.TimeMs, Channel: e.Key, Type: e.Type, Id: e.ID}
		req.Events[i] = &all[i]
	}
	return req
}

// userRequest is the gRPC request of a batch of user events.
func userRequest(events []Event) *hookspb.NotifyUserStatusRequest {
	req := &hookspb.NotifyUserStatusRequest{Events: make([]*hookspb.UserEvent, len(events))}
	all := make([]hookspb.UserEvent, len(events))
	for i := range events {
		e := &events[i]
		all[i] = hookspb.UserEvent{TimeMs: e.TimeMs, User: e.Key, Type: e.Type, Id: e.ID, Info: e.Info}
		req.Events[i] = &all[i]
	}
	return req
}
