package grpcapi

import (
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// Conversions between the protobuf messages and the executor's types.

func publishRequest(r *apipb.PublishRequest) *api.PublishRequest {
	return &api.PublishRequest{
		Channel: r.GetChannel(), Data: r.GetData(), B64Data: r.GetB64Data(),
		PublishFlags: publishFlags(r),
	}
}

// publishFlags reads the options publish and broadcast requests share.
func publishFlags(r interface {
	GetSkipHistory() bool
	GetTags() map[string]string
	GetIdempotencyKey() string
	GetDelta() bool
	GetVersion() uint64
	GetVersionEpoch() string
}) api.PublishFlags {
	return api.PublishFlags{
		SkipHistory: r.GetSkipHistory(), Tags: r.GetTags(),
		IdempotencyKey: r.GetIdempotencyKey(), Delta: r.GetDelta(),
		Version: r.GetVersion(), VersionEpoch: r.GetVersionEpoch(),
	}
}

func broadcastRequest(r *apipb.BroadcastRequest) *api.BroadcastRequest {
	return &api.BroadcastRequest{
		Channels: r.GetChannels(), Data: r.GetData(), B64Data: r.GetB64Data(),
		PublishFlags: publishFlags(r),
	}
}

func streamPosition(p *apipb.StreamPosition) *api.StreamPosition {
	if p == nil {
		return nil
	}
	return &api.StreamPosition{Offset: p.GetOffset(), Epoch: p.GetEpoch()}
}

func subscribeRequest(r *apipb.SubscribeRequest) *api.SubscribeRequest {
	return &api.SubscribeRequest{
		Channel: r.GetChannel(), User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession(),
		Info: r.GetInfo(), B64Info: r.GetB64Info(), Data: r.GetData(), B64Data: r.GetB64Data(),
		RecoverSince: streamPosition(r.GetRecoverSince()), ExpireAt: r.GetExpireAt(),
		Override: subscribeOverride(r.GetOverride()),
	}
}

func subscribeOverride(o *apipb.SubscribeOptionOverride) *api.SubscribeOverride {
	if o == nil {
		return nil
	}
	return &api.SubscribeOverride{
		Presence: boolValue(o.GetPresence()), JoinLeave: boolValue(o.GetJoinLeave()),
		ForceRecovery: boolValue(o.GetForceRecovery()), ForcePositioning: boolValue(o.GetForcePositioning()),
		ForcePushJoinLeave: boolValue(o.GetForcePushJoinLeave()),
	}
}

func boolValue(b *apipb.BoolValue) *api.BoolValue {
	if b == nil {
		return nil
	}
	return &api.BoolValue{Value: b.GetValue()}
}

func unsubscribeRequest(r *apipb.UnsubscribeRequest) *api.UnsubscribeRequest {
	return &api.UnsubscribeRequest{Channel: r.GetChannel(), User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession()}
}

func disconnectRequest(r *apipb.DisconnectRequest) *api.DisconnectRequest {
	out := &api.DisconnectRequest{User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession(), Whitelist: r.GetWhitelist()}
	if d := r.GetDisconnect(); d != nil {
		out.Disconnect = &api.Disconnect{Code: d.GetCode(), Reason: d.GetReason()}
	}
	return out
}

func refreshRequest(r *apipb.RefreshRequest) *api.RefreshRequest {
	return &api.RefreshRequest{
		User: r.GetUser(), Client: r.GetClient(), Session: r.GetSession(),
		Expired: r.GetExpired(), ExpireAt: r.GetExpireAt(), Info: r.GetInfo(),
	}
}

func historyRequest(r *apipb.HistoryRequest) *api.HistoryRequest {
	return &api.HistoryRequest{Channel: r.GetChannel(), Limit: int(r.GetLimit()), Since: streamPosition(r.GetSince()), Reverse: r.GetReverse()}
}

// command converts one command of a batch; one with no request set stays
// empty, which the executor answers with 104.
func command(c *apipb.Command) api.Command {
	if name, err := checkCommand(c); err != nil {
		return api.RefusedCommand(name, err)
	}
	var out api.Command
	switch {
	case c.GetPublish() != nil:
		out.Publish = publishRequest(c.GetPublish())
	case c.GetBroadcast() != nil:
		out.Broadcast = broadcastRequest(c.GetBroadcast())
	case c.GetSubscribe() != nil:
		out.Subscribe = subscribeRequest(c.GetSubscribe())
	case c.GetUnsubscribe() != nil:
		out.Unsubscribe = unsubscribeRequest(c.GetUnsubscribe())
	case c.GetDisconnect() != nil:
		out.Disconnect = disconnectRequest(c.GetDisconnect())
	case c.GetRefresh() != nil:
		out.Refresh = refreshRequest(c.GetRefresh())
	case c.GetPresence() != nil:
		out.Presence = &api.ChannelRequest{Channel: c.GetPresence().GetChannel()}
	case c.GetPresenceStats() != nil:
		out.PresenceStats = &api.ChannelRequest{Channel: c.GetPresenceStats().GetChannel()}
	case c.GetHistory() != nil:
		out.History = historyRequest(c.GetHistory())
	case c.GetHistoryRemove() != nil:
		out.HistoryRemove = &api.ChannelRequest{Channel: c.GetHistoryRemove().GetChannel()}
	case c.GetChannels() != nil:
		out.Channels = &api.ChannelsRequest{Pattern: c.GetChannels().GetPattern()}
	case c.GetInfo() != nil:
		out.Info = &api.InfoRequest{}
	case c.GetRpc() != nil:
		out.RPC = &api.RPCRequest{Method: c.GetRpc().GetMethod(), Params: c.GetRpc().GetParams()}
	}
	return out
}

// reply converts one reply of a batch: its result goes in the field of
// its method.
func reply(r api.Reply) *apipb.Reply {
	out := &apipb.Reply{}
	if r.Error != nil {
		out.Error = apiError(r.Error)
		return out
	}
	switch res := r.Result.(type) {
	case api.PublishResult:
		out.Publish = publishResult(res)
	case api.BroadcastResult:
		out.Broadcast = broadcastResult(res)
	case api.PresenceResult:
		out.Presence = presenceResult(res)
	case api.PresenceStatsResult:
		out.PresenceStats = presenceStatsResult(res)
	case api.HistoryResult:
		out.History = historyResult(res)
	case api.ChannelsResult:
		out.Channels = channelsResult(res)
	case api.InfoResult:
		out.Info = infoResult(res)
	case api.RPCResult:
		out.Rpc = &apipb.RPCResult{Data: res.Data}
	case api.EmptyResult:
		switch r.Method {
		case "subscribe":
			out.Subscribe = &apipb.SubscribeResult{}
		case "unsubscribe":
			out.Unsubscribe = &apipb.UnsubscribeResult{}
		case "disconnect":
			out.Disconnect = &apipb.DisconnectResult{}
		case "refresh":
			out.Refresh = &apipb.RefreshResult{}
		case "history_remove":
			out.HistoryRemove = &apipb.HistoryRemoveResult{}
		}
	}
	return out
}

func apiError(e *api.Error) *apipb.Error {
	return &apipb.Error{Code: e.Code, Message: e.Message}
}

func publishResult(r api.PublishResult) *apipb.PublishResult {
	return &apipb.PublishResult{Offset: r.Offset, Epoch: r.Epoch}
}

func broadcastResult(r api.BroadcastResult) *apipb.BroadcastResult {
	out := &apipb.BroadcastResult{Responses: make([]*apipb.PublishResponse, len(r.Responses))}
	for i, pr := range r.Responses {
		resp := &apipb.PublishResponse{}
		if pr.Error != nil {
			resp.Error = apiError(pr.Error)
		} else if pr.Result != nil {
			resp.Result = publishResult(*pr.Result)
		}
		out.Responses[i] = resp
	}
	return out
}

func clientInfo(ci api.ClientInfo) *apipb.ClientInfo {
	return &apipb.ClientInfo{User: ci.User, Client: ci.Client, ConnInfo: ci.ConnInfo, ChanInfo: ci.ChanInfo}
}

func presenceResult(r api.PresenceResult) *apipb.PresenceResult {
	out := &apipb.PresenceResult{Presence: make(map[string]*apipb.ClientInfo, len(r.Presence))}
	for id, ci := range r.Presence {
		out.Presence[id] = clientInfo(ci)
	}
	return out
}

func presenceStatsResult(r api.PresenceStatsResult) *apipb.PresenceStatsResult {
	return &apipb.PresenceStatsResult{NumClients: uint32(r.NumClients), NumUsers: uint32(r.NumUsers)}
}

func historyResult(r api.HistoryResult) *apipb.HistoryResult {
	out := &apipb.HistoryResult{Publications: make([]*apipb.Publication, len(r.Publications)), Epoch: r.Epoch, Offset: r.Offset}
	for i, p := range r.Publications {
		pub := &apipb.Publication{Data: p.Data, Offset: p.Offset, Tags: p.Tags}
		if p.Info != nil {
			pub.Info = clientInfo(*p.Info)
		}
		out.Publications[i] = pub
	}
	return out
}

func channelsResult(r api.ChannelsResult) *apipb.ChannelsResult {
	out := &apipb.ChannelsResult{Channels: make(map[string]*apipb.ChannelInfo, len(r.Channels))}
	for ch, ci := range r.Channels {
		out.Channels[ch] = &apipb.ChannelInfo{NumClients: uint32(ci.NumClients)}
	}
	return out
}

func infoResult(r api.InfoResult) *apipb.InfoResult {
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
