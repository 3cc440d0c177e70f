// Package pubconv converts between the broker's publications and the
// client protocol's protobuf messages, which the brokers with a server in
// between store and send, and copies publications.
package pubconv

import (
	"bytes"
	"maps"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
)

// ToProtoInfo is info as the protocol's ClientInfo, sharing its bytes.
func ToProtoInfo(info *broker.ClientInfo) *protocol.ClientInfo {
	if info == nil {
		return nil
	}
	return &protocol.ClientInfo{User: info.UserID, Client: info.ClientID, ConnInfo: info.ConnInfo, ChanInfo: info.ChanInfo}
}

// FromProtoInfo is ToProtoInfo reversed.
func FromProtoInfo(info *protocol.ClientInfo) *broker.ClientInfo {
	if info == nil {
		return nil
	}
	return &broker.ClientInfo{ClientID: info.Client, UserID: info.User, ConnInfo: info.ConnInfo, ChanInfo: info.ChanInfo}
}

// ToProto is p as the protocol's Publication, sharing its bytes.
func ToProto(p *broker.Publication) protocol.Publication {
	return protocol.Publication{Offset: p.Offset, Data: p.Data, Info: ToProtoInfo(p.Info), Tags: p.Tags, Time: p.Time}
}

// Decode reads a publication stored or sent as the protocol's
// Publication. Unmarshalling copies every byte field, so data may be a
// view of a string.
func Decode(data []byte) (*broker.Publication, error) {
	var p protocol.Publication
	if err := p.UnmarshalVT(data); err != nil {
		return nil, err
	}
	return &broker.Publication{Offset: p.Offset, Data: p.Data, Info: FromProtoInfo(p.Info), Tags: p.Tags, Time: p.Time}, nil
}

// Clone copies a publication deeply, so that the copy outlives buffers
// its caller reuses.
func Clone(p *broker.Publication) *broker.Publication {
	if p == nil {
		return nil
	}
	c := *p
	c.Data = bytes.Clone(p.Data)
	c.Tags = maps.Clone(p.Tags)
	c.Trace = bytes.Clone(p.Trace)
	if p.Info != nil {
		info := *p.Info
		info.ConnInfo, info.ChanInfo = bytes.Clone(p.Info.ConnInfo), bytes.Clone(p.Info.ChanInfo)
		c.Info = &info
	}
	return &c
}
