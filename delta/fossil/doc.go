// Package fossil creates and applies deltas in the Fossil SCM delta format, the format
// in which Gyre sends a publication of a delta-enabled channel as the difference from the
// previous publication of that channel. Client SDKs (centrifuge-js among them) carry their
// own applier for it, so the bytes produced here must follow the format exactly.
//
// [Create] (or [AppendCreate], which reuses a buffer) turns a source and a target into a
// delta; [Apply] rebuilds the target from the source and the delta, and rejects anything
// malformed with an error that wraps [ErrCorrupt].
//
//	d := fossil.Create(prev, next)
//	got, err := fossil.Apply(prev, d) // got equals next
//
// # Format
//
// A delta is text made of numbers and one-byte separators, with raw target bytes where a
// piece of the target is carried literally. Numbers are unsigned 32-bit integers written
// in base 64, most significant digit first, with no leading zeros (zero is "0"). The 64
// digits, in order of value, are 0-9, A-Z, '_', a-z and '~'; so 6246 is "1Xb".
//
// The delta starts with the length of the target and a newline. Then come commands, each
// appending to the target being built:
//
//	N@OFF,   copy N bytes of the source starting at OFF
//	N:BYTES  insert the N bytes that follow the colon
//
// and last the checksum of the target followed by a semicolon ("SUM;"). The checksum is
// the sum, wrapping at 2^32, of the target read as 32-bit big-endian words, the last
// word padded with zero bytes when the length is not a multiple of four.
//
// An applier checks that no copy reaches past the end of the source, that the commands
// build exactly as many bytes as the header announced, and that the checksum matches.
// The format description gives a copy of length zero the meaning "to the end of the
// source"; the applier in centrifuge-js copies nothing for it, and so does [Apply].
// [Create] never writes one.
//
// # How deltas are made
//
// The source is cut into blocks of 16 bytes and each block's hash goes into a table
// sized to the source. A rolling hash then slides over the target one byte at a time;
// where it meets the hash of a source block, the bytes are compared, the match is grown
// forwards and backwards, and it becomes a copy when the copy command is shorter than
// the bytes it stands for. Target bytes not covered by a copy are inserted. Identical
// inputs give a delta of a few bytes; unrelated inputs give mostly one insert, a few
// bytes longer than the target.
//
// Copies start and end on UTF-8 character boundaries, so every inserted run of a valid
// UTF-8 target is valid UTF-8 and the whole delta is too. That matters on JSON
// connections, where the delta travels as a JSON string: a delta that split a character
// would be mangled on the way.
//
// # Performance and concurrency
//
// All functions are safe for concurrent use. [AppendCreate] takes its hash table from a
// pool, so creating a delta into a reused buffer does not allocate in the steady state;
// its cost is linear in the sizes of source and target. [Apply] allocates the target.
// Inputs of 4 GiB or more cannot be described by the format's 32-bit numbers.
package fossil
