package nats

import (
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/broker/nats/internal/wirepb"
	"github.com/gyrehq/gyre/protocol"
)

type messageKind = wirepb.Message_Type

const (
	publicationMessage = wirepb.Message_PUBLICATION
	joinMessage        = wirepb.Message_JOIN
	leaveMessage       = wirepb.Message_LEAVE
)

// Publications and client infos travel as the client protocol's protobuf
// messages inside a wirepb.Message.

// encodePublication is the message of a publication of channel at sp,
// with pub's trace beside the publication, not in it.
func encodePublication(channel string, pub *broker.Publication, sp broker.StreamPosition, delta bool, prev *broker.Publication) ([]byte, error) {
	pp := pubconv.ToProto(pub)
	pb, err := pp.MarshalVT()
	if err != nil {
		return nil, err
	}
	m := wirepb.Message{Type: publicationMessage, Channel: channel, Publication: pb, Epoch: sp.Epoch, Delta: delta, Trace: pub.Trace}
	if prev != nil {
		pp := pubconv.ToProto(prev)
		if m.Prev, err = pp.MarshalVT(); err != nil {
			return nil, err
		}
	}
	return m.MarshalVT()
}

func encodeEvent(kind messageKind, channel string, info *broker.ClientInfo) ([]byte, error) {
	m := wirepb.Message{Type: kind, Channel: channel}
	if info != nil {
		var err error
		if m.Info, err = pubconv.ToProtoInfo(info).MarshalVT(); err != nil {
			return nil, err
		}
	}
	return m.MarshalVT()
}

// decodeRunPublication reads the publication of m with its position.
func decodeRunPublication(m *wirepb.Message) (broker.RunPublication, error) {
	pub, err := pubconv.Decode(m.Publication)
	if err != nil {
		return broker.RunPublication{}, err
	}
	pub.Trace = m.Trace
	rp := broker.RunPublication{Pub: pub, Position: broker.StreamPosition{Offset: pub.Offset, Epoch: m.Epoch}, Delta: m.Delta}
	if len(m.Prev) > 0 {
		if rp.Prev, err = pubconv.Decode(m.Prev); err != nil {
			return broker.RunPublication{}, err
		}
	}
	return rp, nil
}

func decodeInfo(data []byte) (*broker.ClientInfo, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var info protocol.ClientInfo
	if err := info.UnmarshalVT(data); err != nil {
		return nil, err
	}
	return pubconv.FromProtoInfo(&info), nil
}
