package api

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// The gRPC binding of the methods: conversions between the protobuf
// messages of service CentrifugoApi (apipb) and the executor's types,
// which the table's entries carry. server/grpcapi serves the service
// from the table through CallGRPC, GRPCCommand and GRPCReply.

// CallGRPC runs method m with msg, its gRPC request message
// (m.GRPC+"Request"), and returns the message of its result: what the
// response's result field holds, or for batch the whole BatchResponse.
// The error is the method's (map it with APIError), including the refusal
// of a payload that is not JSON.
func (e *Executor) CallGRPC(ctx context.Context, m *Method, msg proto.Message) (proto.Message, error) {
	req, refused := m.fromProto(msg)
	if refused != nil {
		return nil, refused
	}
	res, err := e.run(ctx, m, req)
	if err != nil {
		return nil, err
	}
	return m.toProto(res), nil
}

// GRPCCommand converts one command of a gRPC batch: the method is the
// Command field set (the one of lowest number if several are), named as
// the method. A command with none set, or only fields Gyre does not know,
// gets 104.
func GRPCCommand(c *apipb.Command) Command {
	pr := c.ProtoReflect()
	fields := pr.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !pr.Has(fd) {
			continue
		}
		name := string(fd.Name())
		m := lookup(name)
		if m == nil {
			return Command{name: name, err: errMethodNotFound}
		}
		req, refused := m.fromProto(pr.Get(fd).Message().Interface())
		if refused != nil {
			return Command{name: name, err: refused}
		}
		return Command{method: m, req: req, name: name}
	}
	return Command{err: errMethodNotFound}
}

// GRPCReply converts one reply of a batch: its result goes in the Reply
// field named as its method.
func GRPCReply(r Reply) *apipb.Reply {
	out := &apipb.Reply{}
	if r.Error != nil {
		out.Error = grpcError(r.Error)
		return out
	}
	m := lookup(r.Method)
	if m == nil {
		return out
	}
	pr := out.ProtoReflect()
	fd := pr.Descriptor().Fields().ByName(protoreflect.Name(m.Name))
	if fd == nil {
		return out
	}
	pr.Set(fd, protoreflect.ValueOfMessage(m.toProto(r.Result).ProtoReflect()))
	return out
}

func grpcError(e *Error) *apipb.Error {
	return &apipb.Error{Code: e.Code, Message: e.Message}
}

// notJSON is the error of a payload field that holds bytes that are not
// JSON; nil for an empty field or JSON. binary names the field that takes
// binary payloads instead, if the request has one.
//
// The payloads of the API are JSON: over HTTP by construction, over gRPC
// because this check refuses anything else with 107. A JSON client
// receives data and info as they are, inside its JSON frames: bytes that
// are not JSON would close every JSON subscriber of the channel with
// 3506, a fault of the publisher that the subscribers would pay for.
// Binary payloads meant for protobuf clients go in b64data and b64info,
// which are not checked. encoding/json.Valid is the check the engine makes
// too when it encodes a publication for JSON clients.
func notJSON(field string, b []byte, binary string) *Error {
	if len(b) == 0 || json.Valid(b) {
		return nil
	}
	msg := "bad request: " + field + " is not JSON"
	if binary != "" {
		msg += " (binary payloads go in " + binary + ")"
	}
	return &Error{Code: 107, Message: msg}
}

// emptyResult is the result message of a method whose result is empty.
func emptyResult[P any, PP interface {
	*P
	proto.Message
}](EmptyResult) PP {
	return PP(new(P))
}

func grpcPublishRequest(r *apipb.PublishRequest) (*PublishRequest, *Error) {
	if err := notJSON("data", r.GetData(), "b64data"); err != nil {
		return nil, err
	}
	return &PublishRequest{
		Channel: r.GetChannel(), Data: r.GetData(), B64Data: r.GetB64Data(),
		PublishFlags: grpcPublishFlags(r),
	}, nil
}

// grpcPublishFlags reads the options publish and broadcast requests
// share.
func grpcPublishFlags(r interface {
	GetSkipHistory() bool
	GetTags() map[string]string
	GetIdempotencyKey() string
	GetDelta() bool
	GetVersion() uint64
	GetVersionEpoch() string
}) PublishFlags {
	return PublishFlags{
		SkipHistory: r.GetSkipHistory(), Tags: r.GetTags(),
		IdempotencyKey: r.GetIdempotencyKey(), Delta: r.GetDelta(),
		Version: r.GetVersion(), VersionEpoch: r.GetVersionEpoch(),
	}
}

func grpcPublishResult(r PublishResult) *apipb.PublishResult {
	return &apipb.PublishResult{Offset: r.Offset, Epoch: r.Epoch}
}

func grpcBroadcastRequest(r *apipb.BroadcastRequest) (*BroadcastRequest, *Error) {
	if err := notJSON("data", r.GetData(), "b64data"); err != nil {
		return nil, err
	}
	return &BroadcastRequest{
		Channels: r.GetChannels(), Data: r.GetData(), B64Data: r.GetB64Data(),
		PublishFlags: grpcPublishFlags(r),
	}, nil
}

func grpcBroadcastResult(r BroadcastResult) *apipb.BroadcastResult {
	out := &apipb.BroadcastResult{Responses: make([]*apipb.PublishResponse, len(r.Responses))}
	for i, pr := range r.Responses {
		resp := &apipb.PublishResponse{}
		if pr.Error != nil {
			resp.Error = grpcError(pr.Error)
		} else if pr.Result != nil {
			resp.Result = grpcPublishResult(*pr.Result)
		}
		out.Responses[i] = resp
	}
	return out
}

func grpcStreamPosition(p *apipb.StreamPosition) *StreamPosition {
	if p == nil {
		return nil
	}
	return &StreamPosition{Offset: p.GetOffset(), Epoch: p.GetEpoch()}
}

func grpcSubscribeRequest(r *apipb.SubscribeRequest) (*SubscribeRequest, *Error) {
	if err := notJSON("info", r.GetInfo(), "b64info"); err != nil {
		return nil, err
	}
	if err := notJSON("data", r.GetData(), "b64data"); err != nil {
		return nil, err
	}
	return &SubscribeRequest{
		Channel: r.GetChannel(), User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession(),
		Info: r.GetInfo(), B64Info: r.GetB64Info(), Data: r.GetData(), B64Data: r.GetB64Data(),
		RecoverSince: grpcStreamPosition(r.GetRecoverSince()), ExpireAt: r.GetExpireAt(),
		Override: grpcSubscribeOverride(r.GetOverride()),
	}, nil
}

func grpcSubscribeOverride(o *apipb.SubscribeOptionOverride) *SubscribeOverride {
	if o == nil {
		return nil
	}
	return &SubscribeOverride{
		Presence: grpcBoolValue(o.GetPresence()), JoinLeave: grpcBoolValue(o.GetJoinLeave()),
		ForceRecovery: grpcBoolValue(o.GetForceRecovery()), ForcePositioning: grpcBoolValue(o.GetForcePositioning()),
		ForcePushJoinLeave: grpcBoolValue(o.GetForcePushJoinLeave()),
	}
}

func grpcBoolValue(b *apipb.BoolValue) *BoolValue {
	if b == nil {
		return nil
	}
	return &BoolValue{Value: b.GetValue()}
}

func grpcUnsubscribeRequest(r *apipb.UnsubscribeRequest) (*UnsubscribeRequest, *Error) {
	return &UnsubscribeRequest{Channel: r.GetChannel(), User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession()}, nil
}

func grpcDisconnectRequest(r *apipb.DisconnectRequest) (*DisconnectRequest, *Error) {
	out := &DisconnectRequest{User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession(), Whitelist: r.GetWhitelist()}
	if d := r.GetDisconnect(); d != nil {
		out.Disconnect = &Disconnect{Code: d.GetCode(), Reason: d.GetReason()}
	}
	return out, nil
}

func grpcRefreshRequest(r *apipb.RefreshRequest) (*RefreshRequest, *Error) {
	if err := notJSON("info", r.GetInfo(), ""); err != nil {
		return nil, err
	}
	return &RefreshRequest{
		User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession(),
		Expired: r.GetExpired(), ExpireAt: r.GetExpireAt(), Info: r.GetInfo(),
	}, nil
}

// grpcChannelRequest reads the request of a method that takes only a
// channel.
func grpcChannelRequest[P interface{ GetChannel() string }](r P) (*ChannelRequest, *Error) {
	return &ChannelRequest{Channel: r.GetChannel()}, nil
}

func grpcClientInfo(ci ClientInfo) *apipb.ClientInfo {
	return &apipb.ClientInfo{User: ci.User, Client: ci.Client, ConnInfo: ci.ConnInfo, ChanInfo: ci.ChanInfo}
}

func grpcPresenceResult(r PresenceResult) *apipb.PresenceResult {
	out := &apipb.PresenceResult{Presence: make(map[string]*apipb.ClientInfo, len(r.Presence))}
	for id, ci := range r.Presence {
		out.Presence[id] = grpcClientInfo(ci)
	}
	return out
}

func grpcPresenceStatsResult(r PresenceStatsResult) *apipb.PresenceStatsResult {
	return &apipb.PresenceStatsResult{NumClients: uint32(r.NumClients), NumUsers: uint32(r.NumUsers)}
}

func grpcHistoryRequest(r *apipb.HistoryRequest) (*HistoryRequest, *Error) {
	return &HistoryRequest{Channel: r.GetChannel(), Limit: int(r.GetLimit()), Since: grpcStreamPosition(r.GetSince()), Reverse: r.GetReverse()}, nil
}

func grpcHistoryResult(r HistoryResult) *apipb.HistoryResult {
	out := &apipb.HistoryResult{Publications: make([]*apipb.Publication, len(r.Publications)), Epoch: r.Epoch, Offset: r.Offset}
	for i, p := range r.Publications {
		pub := &apipb.Publication{Data: p.Data, Offset: p.Offset, Tags: p.Tags}
		if p.Info != nil {
			pub.Info = grpcClientInfo(*p.Info)
		}
		out.Publications[i] = pub
	}
	return out
}

func grpcChannelsRequest(r *apipb.ChannelsRequest) (*ChannelsRequest, *Error) {
	return &ChannelsRequest{Pattern: r.GetPattern()}, nil
}

func grpcChannelsResult(r ChannelsResult) *apipb.ChannelsResult {
	out := &apipb.ChannelsResult{Channels: make(map[string]*apipb.ChannelInfo, len(r.Channels))}
	for ch, ci := range r.Channels {
		out.Channels[ch] = &apipb.ChannelInfo{NumClients: uint32(ci.NumClients)}
	}
	return out
}

func grpcInfoRequest(*apipb.InfoRequest) (*InfoRequest, *Error) { return &InfoRequest{}, nil }

func grpcInfoResult(r InfoResult) *apipb.InfoResult {
	out := &apipb.InfoResult{Nodes: make([]*apipb.NodeResult, len(r.Nodes))}
	for i, n := range r.Nodes {
		out.Nodes[i] = &apipb.NodeResult{
			Uid: n.UID, Name: n.Name, Version: n.Version,
			NumClients: uint32(n.NumClients), NumUsers: uint32(n.NumUsers),
			NumChannels: uint32(n.NumChannels), NumSubs: uint32(n.NumSubs),
			Uptime: uint32(n.Uptime),
		}
		if m := n.Metrics; m != nil {
			out.Nodes[i].Metrics = &apipb.Metrics{Interval: m.Interval, Items: m.Items}
		}
	}
	return out
}

func grpcRPCRequest(r *apipb.RPCRequest) (*RPCRequest, *Error) {
	if err := notJSON("params", r.GetParams(), ""); err != nil {
		return nil, err
	}
	return &RPCRequest{Method: r.GetMethod(), Params: r.GetParams()}, nil
}

func grpcRPCResult(r RPCResult) *apipb.RPCResult { return &apipb.RPCResult{Data: r.Data} }

// grpcBatchRequest converts a batch; its commands that cannot run carry
// why, to be answered in their replies.
func grpcBatchRequest(r *apipb.BatchRequest) (*BatchRequest, *Error) {
	cmds := r.GetCommands()
	out := &BatchRequest{Commands: make([]Command, len(cmds)), Parallel: r.GetParallel()}
	for i, c := range cmds {
		out.Commands[i] = GRPCCommand(c)
	}
	return out, nil
}

func grpcBatchResult(r BatchResult) *apipb.BatchResponse {
	out := &apipb.BatchResponse{Replies: make([]*apipb.Reply, len(r.Replies))}
	for i, rep := range r.Replies {
		out.Replies[i] = GRPCReply(rep)
	}
	return out
}
