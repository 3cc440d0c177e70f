package jetstream

import (
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/protocol"
)

// Every stored message carries the channel's position and version in
// headers, so that the last message of a subject is the channel's whole
// meta: reading it (one direct get) is enough to publish the next one.
// The body is the client protocol's Publication in protobuf, so a stored
// publication needs no other schema.
const (
	hdrOffset       = "Gyre-Offset"
	hdrEpoch        = "Gyre-Epoch"
	hdrVersion      = "Gyre-Version"
	hdrVersionEpoch = "Gyre-Version-Epoch"
	// hdrMarker marks a message that holds the meta only (left by
	// RemoveHistory); History skips it.
	hdrMarker = "Gyre-Marker"
)

// newMsg builds the message of a publication, or of a marker when pub is
// nil, at position st.
func newMsg(subject string, st *chanState, pub *broker.Publication) (*nats.Msg, error) {
	h := nats.Header{
		hdrOffset: {strconv.FormatUint(st.offset, 10)},
		hdrEpoch:  {st.epoch},
	}
	if st.version > 0 {
		h[hdrVersion] = []string{strconv.FormatUint(st.version, 10)}
		h[hdrVersionEpoch] = []string{st.versionEpoch}
	}
	m := &nats.Msg{Subject: subject, Header: h}
	if pub == nil {
		h[hdrMarker] = []string{"1"}
		return m, nil
	}
	p := protocol.Publication{Data: pub.Data, Info: pubconv.ToProtoInfo(pub.Info), Tags: pub.Tags, Time: pub.Time, Offset: pub.Offset}
	data, err := p.MarshalVT()
	if err != nil {
		return nil, fmt.Errorf("jetstream: encode publication: %w", err)
	}
	m.Data = data
	return m, nil
}

// stored is a message read back from a stream.
type stored struct {
	seq    uint64
	state  chanState // all but stream and last
	marker bool
	pub    *broker.Publication // nil for a marker
}

// decodeStored reads a message of a history stream.
func decodeStored(seq uint64, h nats.Header, data []byte) (stored, error) {
	var m stored
	m.seq = seq
	off, err := strconv.ParseUint(h.Get(hdrOffset), 10, 64)
	if err != nil {
		return m, fmt.Errorf("jetstream: message %d has no offset: %w", seq, err)
	}
	m.state.seq, m.state.offset, m.state.epoch = seq, off, h.Get(hdrEpoch)
	if m.state.epoch == "" {
		return m, fmt.Errorf("jetstream: message %d has no epoch", seq)
	}
	if v := h.Get(hdrVersion); v != "" {
		if m.state.version, err = strconv.ParseUint(v, 10, 64); err != nil {
			return m, fmt.Errorf("jetstream: message %d: bad version: %w", seq, err)
		}
		m.state.versionEpoch = h.Get(hdrVersionEpoch)
	}
	if h.Get(hdrMarker) != "" {
		m.marker = true
		return m, nil
	}
	var p protocol.Publication
	if err := p.UnmarshalVT(data); err != nil {
		return m, fmt.Errorf("jetstream: decode publication %d: %w", seq, err)
	}
	m.pub = &broker.Publication{Offset: off, Data: p.Data, Info: pubconv.FromProtoInfo(p.Info), Tags: p.Tags, Time: p.Time}
	return m, nil
}
