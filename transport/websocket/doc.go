// Package websocket is the byte layer of Gyre's WebSocket transport: it
// upgrades an HTTP request, reads complete data messages and writes data
// frames. It knows nothing of commands, replies or clients; the engine in the
// module root drives it.
//
// # Wire format
//
// The connection's format is chosen at [Upgrade]: the subprotocol
// "centrifuge-protobuf" selects protobuf (binary frames), "centrifuge-json"
// selects JSON (text frames); without a subprotocol the query parameter
// cf_protocol=protobuf or format=protobuf selects protobuf, and JSON is the
// default. Every frame [Conn.WriteFrame] sends uses the opcode of that
// format.
//
// The client's Sec-WebSocket-Protocol list is read leniently: elements are
// trimmed of spaces and tabs, empty ones are skipped, and repeated header
// lines count as one list in their order. The first element that is exactly
// one of the two names wins; a header that offers neither, an empty one
// included, negotiates no subprotocol and the answer names none.
//
// # Concurrency
//
// One goroutine reads ([Conn.ReadMessage], or the goroutines of
// [Conn.ServeReads], one at a time) while another writes
// ([Conn.WriteFrame], [Conn.WriteFrameParts], [Conn.WriteFrames]);
// [Conn.Close] may be called from any goroutine at any time. Writes are
// serialised by a lock; pongs and close echoes sent by the reader take the
// same lock, so frames never interleave on the wire. Close never queues behind a write in flight: the
// writer sends the close frame when its write ends, so a goroutine
// disconnecting a slow peer is not held up by it.
//
// # Polling
//
// [Conn.ServeReads] reads in the background and hands each message to a
// callback. With a [Poller] on Linux, a plain TCP connection waiting for
// its peer has no goroutine: one epoll set watches every socket
// (level-triggered, one-shot) and one goroutine drains it, waiting for the
// set itself in Go's poller when it is empty, and a readable socket gets a
// short-lived goroutine that handles what arrived, frees the read buffers
// and re-arms the socket. One-shot arming is what keeps the messages of a
// connection in order and never handled two at a time. Bytes already
// buffered in the Conn are handled before re-arming, since epoll knows only
// of the socket. A frame that arrives in parts keeps its goroutine waiting
// in Go's own poller until the rest comes. TLS connections (whose records
// are buffered in crypto/tls) and other systems get a goroutine per
// connection instead.
//
// # Memory
//
// An idle connection owns no buffer of its own beyond a few dozen bytes
// inside [Conn]: the reader blocks on a small array embedded in the struct,
// large enough for a pong or a ping reply from a client. A pooled 4 KiB
// buffer is taken only while a frame is being read and is given back as soon
// as no unread bytes remain. Messages that do not fit that buffer, or that
// arrive in fragments, are assembled in a buffer from size-classed pools that
// is returned at the next ReadMessage. The payload returned by ReadMessage is
// therefore valid only until the next call.
//
// BenchmarkIdleConnections measures the whole cost of an idle connection on
// the server, with a reader goroutine per connection and with a Poller.
//
// On TCP, WriteFrame copies nothing: header and payload go to the kernel with
// one writev. WriteFrameParts copies small parts into a pooled buffer first,
// since a writev of many small pieces costs more than the copy. On other
// connections (TLS) a frame is joined in a pooled buffer so that it leaves
// in one Write.
//
// # Errors
//
// ReadMessage reports the peer's close frame as a [*CloseError] after echoing
// it. A message over the read limit gives an error matching
// [ErrMessageTooLarge] before its payload is read; a frame that breaks RFC
// 6455 gives an error matching [ErrProtocol]; a text message or close reason
// that is not UTF-8 gives [ErrInvalidUTF8]. Each error says what was wrong.
// The connection is unusable for reading after any error, and the caller
// picks the close code: RFC 6455 has 1009 for a large message, 1002 for a
// protocol error and 1007 for bad UTF-8. A dropped connection gives an error
// matching [io.EOF] (between frames) or [io.ErrUnexpectedEOF] (inside one).
//
// # Compression
//
// With [Options.Compression] set, an upgrade accepts permessage-deflate (RFC
// 7692) and answers "permessage-deflate; server_no_context_takeover;
// client_no_context_takeover", with "server_max_window_bits=15" added when
// the accepted offer asked for it, as the RFC requires. The offers are read
// in the client's order, across header lines: client_max_window_bits (with
// or without a value) and both no_context_takeover parameters are accepted;
// an offer is declined, and the next one tried, if it limits the server's
// window below 15 bits (the compressor always uses 32 KiB), repeats a
// parameter, names an unknown one or gives an invalid value. Other
// extensions are never accepted. A header that does not parse, or one
// without an acceptable offer, means no compression: the handshake never
// fails over it.
//
// Both directions are without context takeover: every compressed message
// stands alone, so a connection keeps no deflate state between messages and
// an idle connection costs what it costs without compression
// (BenchmarkIdleConnections measures both; without a Poller, ServeReads
// inflates on the goroutine that handles the message, so that the reading
// goroutine's stack does not grow). It also means a message is
// compressed once, not once per connection: [Compression.AppendFrame] makes
// a complete frame, compressed with RSV1 set when the message is at least
// MinSize bytes and deflate makes it shorter, plain otherwise, and
// [Conn.WriteFrames] sends such frames, unchanged and many in one write, to
// every connection whose [Conn.Compression] is that Compression.
// [Conn.WriteFrame] and [Conn.WriteFrameParts] on such a connection compress
// each message for that connection alone.
//
// RSV1 is accepted on the first frame of a data message, and only on a
// connection that negotiated compression; anywhere else it is an error
// matching [ErrProtocol], as are RSV2, RSV3 and compressed data that does not
// inflate. A compressed message is inflated into a pooled buffer checked
// against the read limit as it grows, so a small message that would inflate
// to gigabytes is refused with an error matching [ErrMessageTooLarge],
// having held about three times the limit at most (the compressed message
// and up to twice the limit of output). The compressed message may exceed
// the limit by about 1/64 of it, since incompressible data grows a little
// in deflate.
package websocket
