package redis

import (
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// Publications and client infos are stored and sent as the client
// protocol's protobuf messages, so a publication read from Redis needs no
// other schema.

func toProtoInfo(info *broker.ClientInfo) *protocol.ClientInfo {
	if info == nil {
		return nil
	}
	return &protocol.ClientInfo{
		User:     info.UserID,
		Client:   info.ClientID,
		ConnInfo: info.ConnInfo,
		ChanInfo: info.ChanInfo,
	}
}

func fromProtoInfo(info *protocol.ClientInfo) *broker.ClientInfo {
	if info == nil {
		return nil
	}
	return &broker.ClientInfo{
		ClientID: info.Client,
		UserID:   info.User,
		ConnInfo: info.ConnInfo,
		ChanInfo: info.ChanInfo,
	}
}

// decodePublication reads a stored or sent publication. Unmarshalling
// copies every byte field, so data may be a view of a string.
func decodePublication(data []byte) (*broker.Publication, error) {
	var p protocol.Publication
	if err := p.UnmarshalVT(data); err != nil {
		return nil, err
	}
	return &broker.Publication{
		Offset: p.Offset,
		Data:   p.Data,
		Info:   fromProtoInfo(p.Info),
		Tags:   p.Tags,
		Time:   p.Time,
	}, nil
}

func decodeInfo(data []byte) (*broker.ClientInfo, error) {
	var info protocol.ClientInfo
	if err := info.UnmarshalVT(data); err != nil {
		return nil, err
	}
	return fromProtoInfo(&info), nil
}
