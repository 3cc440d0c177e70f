// Package compact removes the whitespace of JSON text in place: what the
// outbox consumer does to each payload it reads.
package compact

// JSON removes the whitespace between the tokens of the JSON text b, in
// place, and returns the shortened b. b must be valid JSON.
//
// PostgreSQL writes a JSONB value out with a space after each colon and
// comma ({"n": 1, "m": 2}) whatever the application wrote; without
// compaction every publication's data would carry them to every
// subscriber, and differ from what the application wrote by more than
// the key order JSONB also changes. Strings are kept as they are,
// escapes included.
func JSON(b []byte) []byte {
	out := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b[out] = c
		out++
	}
	return b[:out]
}
