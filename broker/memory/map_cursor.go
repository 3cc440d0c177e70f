package memory

import (
	"encoding/base64"
	"encoding/binary"
	"hash/maphash"

	"github.com/gyrehq/gyre/broker"
)

// cursorCodec makes and reads state cursors: the last key of a page,
// after a short hash of the channel, base64url. The hash lets ReadState
// tell a cursor of another channel (or a made-up one) from its own, and
// its seed, random per broker, that of an earlier process.
type cursorCodec struct{ seed maphash.Seed }

const cursorHashLen = 4

func newCursorCodec() cursorCodec { return cursorCodec{seed: maphash.MakeSeed()} }

func (cc cursorCodec) channelHash(channel string) uint32 {
	return uint32(maphash.String(cc.seed, channel))
}

func (cc cursorCodec) encode(channel, key string) string {
	buf := make([]byte, cursorHashLen, cursorHashLen+len(key))
	binary.BigEndian.PutUint32(buf, cc.channelHash(channel))
	return base64.RawURLEncoding.EncodeToString(append(buf, key...))
}

// decode returns the key a cursor of channel continues after, and whether
// there is one (not for an empty cursor), or broker.ErrBadCursor.
func (cc cursorCodec) decode(channel, cursor string) (string, bool, error) {
	if cursor == "" {
		return "", false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) <= cursorHashLen || binary.BigEndian.Uint32(raw) != cc.channelHash(channel) {
		return "", false, broker.ErrBadCursor
	}
	return string(raw[cursorHashLen:]), true, nil
}
