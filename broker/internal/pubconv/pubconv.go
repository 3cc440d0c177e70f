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

// Clone copies a publication deeply, so that the copy outlives buffers
// its caller reuses.
func Clone(p *broker.Publication) *broker.Publication {
	if p == nil {
		return nil
	}
	c := *p
	c.Data = bytes.Clone(p.Data)
	c.Tags = maps.Clone(p.Tags)
	if p.Info != nil {
		info := *p.Info
		info.ConnInfo, info.ChanInfo = bytes.Clone(p.Info.ConnInfo), bytes.Clone(p.Info.ChanInfo)
		c.Info = &info
	}
	return &c
}
