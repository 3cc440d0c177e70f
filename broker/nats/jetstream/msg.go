package jetstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/protocol"
)

// Every stored message carries the channel's position and version in
// headers, so that the last message of a subject (or its copy) is the
// channel's whole meta: reading it (one direct get) is enough to publish
// the next one. The body is the client protocol's Publication in
// protobuf, so a stored publication needs no other schema.
const (
	// hdrPos is "<offset> <epoch> <floor> <meta TTL ms>": floor is the
	// oldest offset History may return (HistorySize, RemoveHistory), the
	// meta TTL how long the position outlives the message.
	hdrPos = "Gyre-Pos"
	// hdrVersion is "<version> <version epoch>", present once a versioned
	// publication was stored.
	hdrVersion = "Gyre-Version"
	// hdrMarker marks a message that holds the meta only, which History
	// skips: markRemoved (left by RemoveHistory) or markMoved followed by
	// the stream the channel moved to (see carry).
	hdrMarker   = "Gyre-Marker"
	markRemoved = "removed"
	markMoved   = "moved "

	// hdrRun is "<first offset> <count>" on a message that holds a run of
	// publications (count > 1): its body is each publication, length
	// (uvarint) then protobuf, oldest first, and hdrPos is the position
	// the last one leaves.
	hdrRun = "Gyre-Run"

	hdrExpectLastSubjSeq = "Nats-Expected-Last-Subject-Sequence"

	// noEpoch stands for the empty epoch in hdrPos (epochs are base64url).
	noEpoch = '-'
)

// posHeader is the value of hdrPos for st.
func posHeader(st *chanState) string {
	b := make([]byte, 0, 48)
	b = strconv.AppendUint(b, st.offset, 10)
	b = append(b, ' ')
	if st.epoch == "" {
		b = append(b, noEpoch) // no position (delta bases, results without history)
	} else {
		b = append(b, st.epoch...)
	}
	b = append(b, ' ')
	b = strconv.AppendUint(b, st.floor, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, st.metaTTL.Milliseconds(), 10)
	return string(b)
}

// setHeaders writes st's position and version into h (whose other Gyre
// headers it clears), and the marker when not empty.
func setHeaders(h nats.Header, st *chanState, marker string) {
	setHeader(h, hdrPos, posHeader(st))
	if st.version > 0 {
		setHeader(h, hdrVersion, strconv.FormatUint(st.version, 10)+" "+st.versionEpoch)
	} else {
		delete(h, hdrVersion)
	}
	if marker != "" {
		setHeader(h, hdrMarker, marker)
	} else {
		delete(h, hdrMarker)
	}
	delete(h, hdrRun)
}

// setHeader sets one value, reusing the slice of a header used again.
func setHeader(h nats.Header, key, value string) {
	if v := h[key]; len(v) == 1 {
		v[0] = value
		return
	}
	h[key] = []string{value}
}

// encodePub is pub in the client protocol's protobuf, appended to buf.
func encodePub(buf []byte, pub *broker.Publication) ([]byte, error) {
	p := pubconv.ToProto(pub)
	return marshalPub(buf, &p)
}

// appendRunPub appends pub to the body of a run: its length, then itself.
func appendRunPub(buf []byte, pub *broker.Publication) ([]byte, error) {
	p := pubconv.ToProto(pub)
	buf = binary.AppendUvarint(buf, uint64(p.SizeVT()))
	return marshalPub(buf, &p)
}

func marshalPub(buf []byte, p *protocol.Publication) ([]byte, error) {
	n := p.SizeVT()
	buf = append(buf, make([]byte, n)...)
	if _, err := p.MarshalToSizedBufferVT(buf[len(buf)-n:]); err != nil {
		return nil, fmt.Errorf("jetstream: encode publication: %w", err)
	}
	return buf, nil
}

// runHeader is the value of hdrRun.
func runHeader(first uint64, count int) string {
	return strconv.FormatUint(first, 10) + " " + strconv.Itoa(count)
}

// newMsg builds the message of a publication, or of a marker when pub is
// nil, at position st.
func newMsg(subject string, st *chanState, pub *broker.Publication, marker string) (*nats.Msg, error) {
	m := &nats.Msg{Subject: subject, Header: nats.Header{}}
	setHeaders(m.Header, st, marker)
	if pub == nil {
		return m, nil
	}
	data, err := encodePub(nil, pub)
	if err != nil {
		return nil, err
	}
	m.Data = data
	return m, nil
}

// stored is a message read back from a stream.
type stored struct {
	seq    uint64
	state  chanState // stream and seq aside; offset is the last one held
	first  uint64    // the first offset held (state.offset but for runs)
	marker bool
	pub    *broker.Publication   // the last publication held, nil for a marker
	pubs   []*broker.Publication // every publication held, oldest first
}

// has reports whether the message holds offset o.
func (m *stored) has(o uint64) bool { return m.seq != 0 && m.first <= o && o <= m.state.offset }

// at returns the publication with offset o, which the message holds.
func (m *stored) at(o uint64) *broker.Publication {
	if m.marker {
		return nil
	}
	return m.pubs[o-m.first]
}

// decodeStored reads a message of a history, copy or delta stream.
func decodeStored(seq uint64, h nats.Header, data []byte) (stored, error) {
	m := stored{seq: seq}
	if err := parsePos(h.Get(hdrPos), &m.state); err != nil {
		return m, fmt.Errorf("jetstream: message %d: %w", seq, err)
	}
	if v := h.Get(hdrVersion); v != "" {
		num, epoch, _ := strings.Cut(v, " ")
		var err error
		if m.state.version, err = strconv.ParseUint(num, 10, 64); err != nil {
			return m, fmt.Errorf("jetstream: message %d: bad version: %w", seq, err)
		}
		m.state.versionEpoch = epoch
	}
	m.first = m.state.offset
	if mk := h.Get(hdrMarker); mk != "" {
		m.marker = true
		m.state.moved, _ = strings.CutPrefix(mk, markMoved)
		if m.state.moved == mk {
			m.state.moved = ""
		}
		return m, nil
	}
	if run := h.Get(hdrRun); run != "" {
		return decodeRun(m, run, data)
	}
	pub, err := decodePub(data, m.state.offset)
	if err != nil {
		return m, fmt.Errorf("jetstream: decode publication %d: %w", seq, err)
	}
	m.pub, m.pubs = pub, []*broker.Publication{pub}
	return m, nil
}

// decodeRun reads the publications of a run message.
func decodeRun(m stored, run string, data []byte) (stored, error) {
	f, n, _ := strings.Cut(run, " ")
	first, err1 := strconv.ParseUint(f, 10, 64)
	count, err2 := strconv.Atoi(n)
	if err := errors.Join(err1, err2); err != nil || count < 1 || first+uint64(count)-1 != m.state.offset {
		return m, fmt.Errorf("jetstream: message %d: bad %s header %q", m.seq, hdrRun, run)
	}
	m.first, m.pubs = first, make([]*broker.Publication, count)
	for i := range count {
		size, k := binary.Uvarint(data)
		if k <= 0 || size > uint64(len(data)-k) {
			return m, fmt.Errorf("jetstream: decode publication %d of message %d: truncated", i, m.seq)
		}
		pub, err := decodePub(data[k:k+int(size)], first+uint64(i))
		if err != nil {
			return m, fmt.Errorf("jetstream: decode publication %d of message %d: %w", i, m.seq, err)
		}
		m.pubs[i], data = pub, data[k+int(size):]
	}
	m.pub = m.pubs[count-1]
	return m, nil
}

func decodePub(data []byte, offset uint64) (*broker.Publication, error) {
	p, err := pubconv.Decode(data)
	if err != nil {
		return nil, err
	}
	p.Offset = offset
	return p, nil
}

// parsePos reads a hdrPos value into st.
func parsePos(v string, st *chanState) error {
	f := strings.Fields(v)
	if len(f) != 4 {
		return fmt.Errorf("bad %s header %q", hdrPos, v)
	}
	var err error
	var ttl int64
	if st.offset, err = strconv.ParseUint(f[0], 10, 64); err == nil {
		if st.floor, err = strconv.ParseUint(f[2], 10, 64); err == nil {
			ttl, err = strconv.ParseInt(f[3], 10, 64)
		}
	}
	if err != nil {
		return fmt.Errorf("bad %s header %q: %w", hdrPos, v, err)
	}
	st.epoch, st.metaTTL = f[1], time.Duration(ttl)*time.Millisecond
	if st.epoch == string(noEpoch) {
		st.epoch = ""
	}
	return nil
}
