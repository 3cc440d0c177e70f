package loadtest

import "encoding/binary"

// Field numbers on the path Reply.push(4) → Push.pub(4) → Publication.data(4).
const (
	pbReplyPush = 4
	pbPushPub   = 4
	pbPubData   = 4
)

// pbPublicationData returns the data of the publication a protobuf Reply
// carries, walking the fields without decoding them. ok is false for any
// other reply (a result, an error, another push), which the caller then
// decodes in full.
func pbPublicationData(reply []byte) (data []byte, ok bool) {
	push, ok := pbOnlyField(reply, pbReplyPush)
	if !ok {
		return nil, false
	}
	pub, ok := pbField(push, pbPushPub)
	if !ok {
		return nil, false
	}
	return pbField(pub, pbPubData)
}

// pbOnlyField returns field num when it is the only non-empty field of
// msg (a reply with an id or an error is not a bare push).
func pbOnlyField(msg []byte, num uint64) ([]byte, bool) {
	var found []byte
	ok := false
	for len(msg) > 0 {
		n, typ, val, rest, good := pbNext(msg)
		if !good {
			return nil, false
		}
		if n != num || typ != 2 {
			return nil, false
		}
		found, ok, msg = val, true, rest
	}
	return found, ok
}

// pbField returns the last length-delimited field num of msg.
func pbField(msg []byte, num uint64) ([]byte, bool) {
	var found []byte
	ok := false
	for len(msg) > 0 {
		n, typ, val, rest, good := pbNext(msg)
		if !good {
			return nil, false
		}
		if n == num && typ == 2 {
			found, ok = val, true
		}
		msg = rest
	}
	return found, ok
}

// pbNext splits the first field off msg; val is set for length-delimited
// fields only.
func pbNext(msg []byte) (num uint64, typ int, val, rest []byte, ok bool) {
	key, k := binary.Uvarint(msg)
	if k <= 0 {
		return 0, 0, nil, nil, false
	}
	num, typ, msg = key>>3, int(key&7), msg[k:]
	switch typ {
	case 0:
		_, k = binary.Uvarint(msg)
		if k <= 0 {
			return 0, 0, nil, nil, false
		}
		return num, typ, nil, msg[k:], true
	case 1:
		if len(msg) < 8 {
			return 0, 0, nil, nil, false
		}
		return num, typ, nil, msg[8:], true
	case 2:
		l, k := binary.Uvarint(msg)
		if k <= 0 || l > uint64(len(msg)-k) {
			return 0, 0, nil, nil, false
		}
		return num, typ, msg[k : k+int(l)], msg[k+int(l):], true
	case 5:
		if len(msg) < 4 {
			return 0, 0, nil, nil, false
		}
		return num, typ, nil, msg[4:], true
	}
	return 0, 0, nil, nil, false
}
