// Package httpstream is the byte layer of Gyre's HTTP streaming transports:
// it turns one HTTP response into a long-lived stream of frames of the
// client protocol, for the bidirectional emulation (HTTP streaming and
// Server-Sent Events, with commands arriving in other requests) and for the
// unidirectional transports. It knows nothing of commands, replies or
// clients; the engine in the module root drives it.
//
// # Wire formats
//
// A frame handed to [Stream.WriteFrame] holds one or more messages, framed
// as the engine frames them for a WebSocket: JSON messages joined by '\n',
// or protobuf messages each prefixed by its uvarint length. The stream's
// [Format] decides how they go out:
//
//   - [Lines]: every JSON message on its own line, each line ended by '\n'
//     (newline-delimited JSON).
//   - [Delimited]: protobuf frames as they are; a reader splits them by the
//     length prefixes.
//   - [SSE]: every JSON message as one Server-Sent Event ("data: <json>"
//     and an empty line), see [AppendEvent].
//
// Every frame is flushed as soon as it is written, so a proxy or the
// client's buffers are the only delay.
//
// # Concurrency and lifetime
//
// A Stream lives inside the HTTP handler that started it. WriteFrame may be
// called from any goroutine, one at a time or concurrently (writes are
// serialised), but only until the handler calls [Stream.Finish], which it
// must do before it returns: net/http forbids touching a ResponseWriter
// after that. Finish waits for a write in flight, which the write timeout
// bounds, so a peer that stops reading holds a handler for at most one
// timeout.
//
// # Connections
//
// [Start] lifts the server's read and write timeouts for the response, so
// that a stream outlives them, and each write then sets a deadline of its
// own. On HTTP/1 the deadline is on the connection, and net/http leaves it
// there after the handler returns, so an HTTP/1 stream is answered with
// "Connection: close" and its connection is not reused. HTTP/2 deadlines
// belong to the stream and fire whether a write is under way or not, so
// each one is cleared once its write is done; the connection stays
// shared.
//
// # Memory
//
// A stream owns no buffer: frames are written into the response writer's
// own buffer and flushed. An idle stream costs the response of its request
// and a few words.
package httpstream
