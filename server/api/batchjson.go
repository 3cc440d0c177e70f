package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// A batch is read in one pass that only finds where each command's
// request starts and ends; each request is then decoded by
// encoding/json as its turn comes. Reading the whole batch with
// encoding/json scanned every byte four times before the requests were
// decoded (json.Unmarshal's check, the skip that hands the batch to its
// UnmarshalJSON, that method's check, its decode into raw messages, which
// it copied), and cost more than decoding the requests themselves
// (docs/benchmarks.md, "History publishes on Redis").

// rawCommand is a command of a batch as read from JSON: its method and
// request, a slice of the batch's JSON; keys counts the distinct methods
// its object named (exactly one is valid).
type rawCommand struct {
	name string
	body []byte
	keys int
}

// errMalformed stands for JSON that is not JSON; the API checks a body
// before reading it, so this is a defence, not a path.
var errMalformed = &Error{107, "bad request: malformed JSON"}

// readBatchJSON reads a batch request, {"commands":[{"<method>":{...}},
// ...],"parallel":false}, matching member names as encoding/json does
// (case-insensitively, the last of repeated ones winning; where
// encoding/json merges a repeated commands array into the earlier one,
// the last replaces it) and refusing what it refuses with the same
// messages.
func readBatchJSON(b []byte) (*BatchRequest, error) {
	r := &BatchRequest{fromJSON: true}
	i := skipSpace(b, 0)
	if i < len(b) && b[i] == 'n' {
		return r, nil // null: an empty batch, as encoding/json leaves it
	}
	if i == len(b) || b[i] != '{' {
		return nil, &Error{107, "bad request: the request must be a JSON object"}
	}
	err := eachMember(b, i, func(key string, v []byte) error {
		switch {
		case strings.EqualFold(key, "commands"):
			cmds, err := readCommands(v)
			r.raw = cmds
			return err
		case strings.EqualFold(key, "parallel"):
			switch string(v) {
			case "true":
				r.Parallel = true
			case "false":
				r.Parallel = false
			case "null":
				// encoding/json leaves the field as it was
			default:
				return typeError("parallel", v, "bool")
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// readCommands reads the commands array.
func readCommands(v []byte) ([]rawCommand, error) {
	switch v[0] {
	case 'n':
		return nil, nil
	case '[':
	default:
		return nil, typeError("commands", v, "slice")
	}
	cmds := make([]rawCommand, 0, 16)
	err := eachElement(v, func(el []byte) error {
		var c rawCommand
		switch el[0] {
		case 'n':
			// null: a command naming no method, refused on its own
		case '{':
			var names []string
			err := eachMember(el, 0, func(key string, body []byte) error {
				if !slices.Contains(names, key) {
					names = append(names, key)
				}
				// The last of a repeated method wins; with two methods
				// the command is refused anyway.
				c.name, c.body = key, body
				return nil
			})
			if err != nil {
				return err
			}
			c.keys = len(names)
		default:
			return typeError("commands", el, "map")
		}
		cmds = append(cmds, c)
		return nil
	})
	return cmds, err
}

// typeError is the error encoding/json's decode gives (see decode) for
// a value v where a Go kind was wanted.
func typeError(field string, v []byte, kind string) *Error {
	var what string
	switch v[0] {
	case '{':
		what = "object"
	case '[':
		what = "array"
	case '"':
		what = "string"
	case 't', 'f':
		what = "bool"
	default:
		what = "number"
	}
	return typeMismatch(field, what, kind)
}

// eachMember calls f with each member of the object starting at b[i]:
// its name, unescaped, and its value.
func eachMember(b []byte, i int, f func(key string, v []byte) error) error {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		if i == len(b) || b[i] != '"' {
			return errMalformed
		}
		end, err := skipValue(b, i)
		if err != nil {
			return err
		}
		key, err := memberName(b[i:end])
		if err != nil {
			return err
		}
		i = skipSpace(b, end)
		if i == len(b) || b[i] != ':' {
			return errMalformed
		}
		start := skipSpace(b, i+1)
		if end, err = skipValue(b, start); err != nil {
			return err
		}
		if err := f(key, b[start:end]); err != nil {
			return err
		}
		var done bool
		if i, done, err = afterValue(b, end, '}'); done || err != nil {
			return err
		}
	}
}

// eachElement calls f with each element of the array b.
func eachElement(b []byte, f func(v []byte) error) error {
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		end, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if err := f(b[i:end]); err != nil {
			return err
		}
		var done bool
		if i, done, err = afterValue(b, end, ']'); done || err != nil {
			return err
		}
	}
}

// afterValue steps over what follows a value of an object or array
// ending in closing, from b[end]: the separator and space to the next
// member or element (at next), or the end (done).
func afterValue(b []byte, end int, closing byte) (next int, done bool, err error) {
	i := skipSpace(b, end)
	switch {
	case i == len(b):
		return 0, false, errMalformed
	case b[i] == closing:
		return 0, true, nil
	case b[i] != ',':
		return 0, false, errMalformed
	}
	return skipSpace(b, i+1), false, nil
}

// memberName unescapes a quoted member name; most have no escapes (and
// encoding/json turns invalid UTF-8 into U+FFFD).
func memberName(q []byte) (string, error) {
	if bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", errMalformed
	}
	return s, nil
}

// skipValue returns the index just past the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errMalformed
	}
	switch b[i] {
	case '"':
		// The first quote after an even number of backslashes ends it.
		for j := i + 1; ; j++ {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				return 0, errMalformed
			}
			j += k
			escapes := 0
			for p := j - 1; b[p] == '\\'; p-- {
				escapes++
			}
			if escapes%2 == 0 {
				return j + 1, nil
			}
		}
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errMalformed
	}
	j := i
	for j < len(b) && !isDelimiter(b[j]) {
		j++
	}
	if j == i {
		return 0, errMalformed
	}
	return j, nil
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
