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
	return readPublishMembers(b, memberChannel, &publishFields{channel: &r.Channel, data: &r.Data, b64: &r.B64Data, flags: &r.PublishFlags})
}

// readBroadcastJSON reads a broadcast request as readPublishJSON reads a
// publish request, its channels an array of such strings. Reading a
// broadcast to thousands of channels twice (json.Unmarshal checks the
// whole request before it decodes it) took a tenth of the server's CPU
// (docs/benchmarks.md, "Side by side with Centrifugo").
func readBroadcastJSON(b []byte, r *BroadcastRequest) bool {
	return readPublishMembers(b, memberChannels, &publishFields{channels: &r.Channels, data: &r.Data, b64: &r.B64Data, flags: &r.PublishFlags})
}

// publishFields are where readPublishMembers puts what it reads.
type publishFields struct {
	channel  *string
	channels *[]string
	data     *Payload
	b64      *string
	flags    *PublishFlags
}

// readPublishMembers reads the object b of the members publish and
// broadcast share and target, the one naming where to publish.
func readPublishMembers(b []byte, target uint16, to *publishFields) bool {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	var seen uint16
	f := to.flags
	err := eachMember(b, i, func(key string, v []byte) error {
		bit, ok := publishMembers[key]
		if !ok || bit&(memberChannel|memberChannels) != 0 && bit != target || seen&bit != 0 || v[0] == 'n' {
			return errNotQuick
		}
		seen |= bit
		var ok2 bool
		switch bit {
		case memberChannel:
			*to.channel, ok2 = plainString(v)
		case memberChannels:
			*to.channels, ok2 = plainStrings(v)
		case memberData:
			*to.data, ok2 = append(Payload(nil), v...), true
		case memberB64Data:
			*to.b64, ok2 = plainString(v)
		case memberSkipHistory:
			f.SkipHistory, ok2 = plainBool(v)
		case memberDelta:
			f.Delta, ok2 = plainBool(v)
		case memberIdempotencyKey:
			f.IdempotencyKey, ok2 = plainString(v)
		case memberVersionEpoch:
			f.VersionEpoch, ok2 = plainString(v)
		case memberVersion:
			n, err := strconv.ParseUint(string(v), 10, 64)
			f.Version, ok2 = n, err == nil
		case memberTags:
			f.Tags, ok2 = plainTags(v)
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
	memberChannels
)

var publishMembers = map[string]uint16{
	"channel": memberChannel, "channels": memberChannels, "data": memberData, "b64data": memberB64Data,
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

// plainStrings reads an array of plain strings.
func plainStrings(v []byte) ([]string, bool) {
	if v[0] != '[' {
		return nil, false
	}
	list := make([]string, 0, bytes.Count(v, []byte{','})+1)
	err := eachElement(v, func(e []byte) error {
		s, ok := plainString(e)
		if !ok {
			return errNotQuick
		}
		list = append(list, s)
		return nil
	})
	return list, err == nil
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
