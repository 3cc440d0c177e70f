// Package protocol is the client protocol of Gyre: the messages a client and the server
// exchange, their two wire formats, and how messages are framed.
//
// The messages are defined in client.proto and generated with protoc-gen-go (the types)
// and protoc-gen-go-vtproto (reflection-free marshal, unmarshal, size, clone and equal);
// generate.sh regenerates them. Package name and field numbers are those of the
// Centrifugo client protocol v2, so the Centrifugo SDKs talk to Gyre unchanged.
//
// The package imports nothing of Gyre; every other layer imports it.
//
// # Messages
//
// A client sends [Command]s; the server answers each with a [Reply] carrying the same id
// and either an [Error] or the result matching the request. Messages the server sends on
// its own are [Push]es, wrapped in a Reply with id 0 on bidirectional transports and
// sent bare on unidirectional ones. A Command or Reply holds exactly one request or
// result field; there is no oneof on the wire. An empty Reply is the server's ping and
// an empty Command is the client's pong.
//
// # Framing
//
// One transport frame (a WebSocket message, an HTTP-streaming chunk) carries one or more
// messages:
//
//   - JSON ([TypeJSON]): messages separated by '\n', no trailing newline. Decoding also
//     accepts a trailing newline, "\r\n", empty lines and whitespace between messages.
//     A ping is "{}".
//   - Protobuf ([TypeProtobuf]): every message is preceded by its length as an unsigned
//     varint. A ping is the single byte 0x00, a zero-length message.
//
// [AppendReply], [AppendPush] and [AppendCommand] append one framed message (for JSON,
// the bare object); [JoinFrame] joins framed messages into a frame. [DecodeCommands],
// [DecodeReplies] and [DecodePushes] split a frame and decode every message in it.
// [DecodeCommand], [EncodeCommand] and friends work on single unframed messages.
//
// # JSON
//
// Field names are the proto names (snake_case) and fields go out in proto field order;
// zero values are left out, set message fields are written even when empty. Integers,
// 64-bit ones included, are JSON numbers; decoding accepts integer literals only (no
// fraction, exponent or quotes) and rejects values out of the field's range. Maps are
// objects, written with their keys sorted. null reads as the field's zero value. Unknown
// members are skipped, but must still be valid JSON; a value of the wrong type is an
// error.
//
// Bytes fields (Publication.data, ClientInfo.conn_info and chan_info, the data of
// requests, results and pushes) carry raw embedded JSON, not base64: the encoder writes
// them verbatim, and the decoder keeps the exact bytes of whatever JSON value is there
// (object, array, string, number, true, false or null), copied out of the frame. Whether
// bytes that reach a JSON connection are JSON at all is up to the code that accepted
// them; use [AppendJSONString] to carry arbitrary text as a JSON string.
//
// Strings are UTF-8. The decoder rejects invalid UTF-8 and raw control characters
// anywhere in the input, raw values included, since those bytes are sent on to other
// clients; escaped lone surrogates become U+FFFD. The encoder never produces invalid
// JSON: it escapes quotes, backslashes, control characters and U+2028/U+2029, and
// replaces each byte of invalid UTF-8 (which a protobuf peer may send) with U+FFFD.
// Nesting is limited to 256 levels.
//
// # Errors
//
// Every decoding error wraps [ErrMalformed]: the peer broke the protocol. A [Type] other
// than the two known ones gives [ErrUnknownType].
//
// # Performance
//
// Encoding is append-style with no reflection: encoding a publication into a reused
// buffer does not allocate, in either format. Decoders allocate the messages and what
// they hold (strings, bytes, maps, slices) and nothing else: the JSON decoder is a
// single pass over the input that writes straight into the message structs, and is
// pooled with its scratch space.
package protocol
