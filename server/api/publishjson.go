package api

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// readPublishJSON reads the usual shape of a publish request without
// reflection: member names as documented, each once, no nulls, strings
// without escapes, a version in plain digits. Anything else reports
// false, and encoding/json reads the request instead, so that every
// request decodes as encoding/json decodes it (its case-insensitive
// names, its merging of repeated members, its errors); only the common
// case is quick. encoding/json took a third of the server's CPU on a
// stream of batched publishes (docs/benchmarks.md, "History publishes on
// Redis"). b is valid JSON.
func readPublishJSON(b []byte, r *PublishRequest) bool {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	var seen uint16
	err := eachMember(b, i, func(key string, v []byte) error {
		bit, ok := publishMembers[key]
		if !ok || seen&bit != 0 || v[0] == 'n' {
			return errNotQuick
		}
		seen |= bit
		var ok2 bool
		switch bit {
		case memberChannel:
			r.Channel, ok2 = plainString(v)
		case memberData:
			r.Data, ok2 = append(Payload(nil), v...), true
		case memberB64Data:
			r.B64Data, ok2 = plainString(v)
		case memberSkipHistory:
			r.SkipHistory, ok2 = plainBool(v)
		case memberDelta:
			r.Delta, ok2 = plainBool(v)
		case memberIdempotencyKey:
			r.IdempotencyKey, ok2 = plainString(v)
		case memberVersionEpoch:
			r.VersionEpoch, ok2 = plainString(v)
		case memberVersion:
			n, err := strconv.ParseUint(string(v), 10, 64)
			r.Version, ok2 = n, err == nil
		case memberTags:
			r.Tags, ok2 = plainTags(v)
		}
		if !ok2 {
			return errNotQuick
		}
		return nil
	})
	return err == nil
}

// errNotQuick stops readPublishJSON at what it leaves to encoding/json.
var errNotQuick = &Error{107, "not the usual shape"}

const (
	memberChannel uint16 = 1 << iota
	memberData
	memberB64Data
	memberSkipHistory
	memberTags
	memberIdempotencyKey
	memberDelta
	memberVersion
	memberVersionEpoch
)

var publishMembers = map[string]uint16{
	"channel": memberChannel, "data": memberData, "b64data": memberB64Data,
	"skip_history": memberSkipHistory, "tags": memberTags, "idempotency_key": memberIdempotencyKey,
	"delta": memberDelta, "version": memberVersion, "version_epoch": memberVersionEpoch,
}

// plainString is the JSON string v when it needs no unescaping (and
// holds valid UTF-8, which encoding/json would otherwise repair).
func plainString(v []byte) (string, bool) {
	if v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

func plainBool(v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// plainTags reads an object of plain strings.
func plainTags(v []byte) (map[string]string, bool) {
	if v[0] != '{' {
		return nil, false
	}
	tags := make(map[string]string)
	err := eachMember(v, 0, func(key string, val []byte) error {
		s, ok := plainString(val)
		if !ok {
			return errNotQuick
		}
		tags[key] = s
		return nil
	})
	return tags, err == nil
}
