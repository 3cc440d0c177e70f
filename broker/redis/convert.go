package redis

import (
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/protocol"
)

// Publications and client infos are stored and sent as the client
// protocol's protobuf messages, so a publication read from Redis needs no
// other schema.

func decodeInfo(data []byte) (*broker.ClientInfo, error) {
	var info protocol.ClientInfo
	if err := info.UnmarshalVT(data); err != nil {
		return nil, err
	}
	return pubconv.FromProtoInfo(&info), nil
}
