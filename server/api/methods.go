package api

import (
	"context"
	"errors"

	"github.com/gyrehq/gyre"
)

// The API's methods, each once: a typed request in, a typed result and an
// error out. Errors are returned as they come (an *Error, a *gyre.Error or
// anything else); the caller maps them with Executor.APIError.

func requireChannel(ch string) error {
	if ch == "" {
		return errNoChannel
	}
	return nil
}

var errNoChannel = &Error{107, "bad request: channel required"}

// publishItem checks a publish request and makes what to publish of it,
// carrying trace context tc.
func (e *Executor) publishItem(r *PublishRequest, tc []byte) (gyre.PublishItem, error) {
	if err := requireChannel(r.Channel); err != nil {
		return gyre.PublishItem{}, err
	}
	if err := e.publishable(r.Channel); err != nil {
		return gyre.PublishItem{}, err
	}
	data, err := publishData(r.Data, r.B64Data)
	if err != nil {
		return gyre.PublishItem{}, err
	}
	return gyre.PublishItem{Channel: r.Channel, Data: data, Options: r.options(tc)}, nil
}

// broadcastItems checks a broadcast request and makes one item per
// channel of it; an empty channel name, or one that takes no
// publications, gets an item with Err (an *Error) set, not published.
// Each carries trace context tc.
func (e *Executor) broadcastItems(r *BroadcastRequest, tc []byte) ([]gyre.PublishItem, error) {
	if len(r.Channels) == 0 {
		return nil, &Error{107, "bad request: channels required"}
	}
	data, err := publishData(r.Data, r.B64Data)
	if err != nil {
		return nil, err
	}
	opts := r.options(tc)
	items := getItems(len(r.Channels))[:len(r.Channels)]
	for i, ch := range r.Channels {
		items[i] = gyre.PublishItem{Channel: ch, Data: data, Options: opts}
		if ch == "" {
			items[i].Err = errNoChannel
		} else if err := e.publishable(ch); err != nil {
			items[i].Err = err
		}
	}
	return items, nil
}

func toPublishResult(r gyre.PublishResult) PublishResult {
	return PublishResult{Offset: r.Offset, Epoch: r.Epoch}
}

// Publish publishes into one channel.
func (e *Executor) Publish(ctx context.Context, r *PublishRequest) (PublishResult, error) {
	item, err := e.publishItem(r, traceOf(ctx))
	if err != nil {
		return PublishResult{}, err
	}
	items := [1]gyre.PublishItem{item}
	e.node.PublishMany(items[:])
	if err := items[0].Err; err != nil {
		return PublishResult{}, e.failed("publish", item.Channel, err)
	}
	return toPublishResult(items[0].Result), nil
}

// Broadcast publishes the same data into several channels, in one
// PublishMany. A channel that fails has its error in its response; the
// call itself fails only on a bad request.
func (e *Executor) Broadcast(ctx context.Context, r *BroadcastRequest) (BroadcastResult, error) {
	items, err := e.broadcastItems(r, traceOf(ctx))
	if err != nil {
		return BroadcastResult{}, err
	}
	var g publishGroup
	g.addBroadcast(0, items)
	replies := make([]Reply, 1)
	g.publish(e, replies)
	g.release()
	return replies[0].Result.(BroadcastResult), nil
}

func clientFilter(client, session string) gyre.ClientFilter {
	return gyre.ClientFilter{ClientID: client, Session: session}
}

// Subscribe subscribes a user's connections to a channel.
func (e *Executor) Subscribe(_ context.Context, r *SubscribeRequest) (EmptyResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return EmptyResult{}, err
	}
	if r.User == "" && r.Client == "" {
		return EmptyResult{}, &Error{107, "bad request: user or client required"}
	}
	info, err := optionalPayload(r.Info, r.B64Info, "b64info")
	if err != nil {
		return EmptyResult{}, err
	}
	data, err := optionalPayload(r.Data, r.B64Data, "b64data")
	if err != nil {
		return EmptyResult{}, err
	}
	if r.ExpireAt < 0 {
		return EmptyResult{}, &Error{107, "bad request: expire_at is negative"}
	}
	o := gyre.ServerSubscribeOptions{
		SubscribeOptions: gyre.SubscribeOptions{ChanInfo: info, Data: data, Override: r.Override.engine()},
		ExpireAt:         r.ExpireAt,
	}
	if r.RecoverSince != nil {
		o.RecoverSince = &gyre.StreamPosition{Offset: r.RecoverSince.Offset, Epoch: r.RecoverSince.Epoch}
	}
	return EmptyResult{}, e.node.SubscribeWith(r.User, r.Channel, clientFilter(r.Client, r.Session), o)
}

// Unsubscribe removes a user's connections from a channel.
func (e *Executor) Unsubscribe(_ context.Context, r *UnsubscribeRequest) (EmptyResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return EmptyResult{}, err
	}
	return EmptyResult{}, e.node.Unsubscribe(r.User, r.Channel, clientFilter(r.Client, r.Session))
}

// Disconnect closes a user's connections.
func (e *Executor) Disconnect(_ context.Context, r *DisconnectRequest) (EmptyResult, error) {
	d := gyre.DisconnectForceNoReconnect
	if r.Disconnect != nil {
		if r.Disconnect.Code < 3000 || r.Disconnect.Code > 4999 {
			return EmptyResult{}, &Error{107, "bad request: disconnect code must be in 3000..4999"}
		}
		d = &gyre.Disconnect{Code: r.Disconnect.Code, Reason: r.Disconnect.Reason}
	}
	return EmptyResult{}, e.node.Disconnect(r.User, d, clientFilter(r.Client, r.Session), r.Whitelist)
}

// Refresh extends or ends a user's connections.
func (e *Executor) Refresh(_ context.Context, r *RefreshRequest) (EmptyResult, error) {
	return EmptyResult{}, e.node.Refresh(r.User, clientFilter(r.Client, r.Session), r.Expired, r.ExpireAt, r.Info)
}

// Presence lists the clients in a channel.
func (e *Executor) Presence(_ context.Context, r *ChannelRequest) (PresenceResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return PresenceResult{}, err
	}
	m, err := e.node.Presence(r.Channel)
	if err != nil {
		return PresenceResult{}, err
	}
	out := PresenceResult{Presence: make(map[string]ClientInfo, len(m))}
	for id, ci := range m {
		out.Presence[id] = toClientInfo(ci)
	}
	return out, nil
}

func toClientInfo(ci *gyre.ClientInfo) ClientInfo {
	return ClientInfo{User: ci.UserID, Client: ci.ClientID, ConnInfo: ci.ConnInfo, ChanInfo: ci.ChanInfo}
}

// PresenceStats counts the clients and users in a channel.
func (e *Executor) PresenceStats(_ context.Context, r *ChannelRequest) (PresenceStatsResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return PresenceStatsResult{}, err
	}
	st, err := e.node.PresenceStats(r.Channel)
	if err != nil {
		return PresenceStatsResult{}, err
	}
	return PresenceStatsResult{NumClients: st.NumClients, NumUsers: st.NumUsers}, nil
}

// History reads a channel's history.
func (e *Executor) History(_ context.Context, r *HistoryRequest) (HistoryResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return HistoryResult{}, err
	}
	var since *gyre.StreamPosition
	if r.Since != nil {
		since = &gyre.StreamPosition{Offset: r.Since.Offset, Epoch: r.Since.Epoch}
	}
	pubs, sp, err := e.node.History(r.Channel, r.Limit, since, r.Reverse)
	if err != nil {
		return HistoryResult{}, err
	}
	out := HistoryResult{Publications: make([]Publication, len(pubs)), Epoch: sp.Epoch, Offset: sp.Offset}
	for i, p := range pubs {
		out.Publications[i] = Publication{Data: p.Data, Offset: p.Offset, Tags: p.Tags}
		if p.Info != nil {
			ci := toClientInfo(p.Info)
			out.Publications[i].Info = &ci
		}
	}
	return out, nil
}

// HistoryRemove empties a channel's history.
func (e *Executor) HistoryRemove(_ context.Context, r *ChannelRequest) (EmptyResult, error) {
	if err := requireChannel(r.Channel); err != nil {
		return EmptyResult{}, err
	}
	return EmptyResult{}, e.node.RemoveHistory(r.Channel)
}

// Channels lists the active channels of the cluster.
func (e *Executor) Channels(ctx context.Context, r *ChannelsRequest) (ChannelsResult, error) {
	m, err := e.node.ClusterChannels(ctx, r.Pattern)
	if err != nil {
		var ge *gyre.Error
		if !errors.As(err, &ge) {
			return ChannelsResult{}, &Error{107, "bad request: " + err.Error()}
		}
		return ChannelsResult{}, err
	}
	out := ChannelsResult{Channels: make(map[string]ChannelInfo, len(m))}
	for ch, ci := range m {
		out.Channels[ch] = ChannelInfo{NumClients: ci.NumClients}
	}
	return out, nil
}

// Info describes the nodes of the cluster.
func (e *Executor) Info(_ context.Context, _ *InfoRequest) (InfoResult, error) {
	infos := e.node.Info()
	out := InfoResult{Nodes: make([]NodeInfo, 0, len(infos))}
	for _, ni := range infos {
		out.Nodes = append(out.Nodes, NodeInfo{
			UID: ni.ID, Name: ni.Name, Version: ni.Version, NumClients: ni.NumClients,
			NumUsers: ni.NumUsers, NumChannels: ni.NumChannels, NumSubs: ni.NumSubs,
			Uptime:  int64(ni.Uptime.Seconds()),
			Metrics: nodeMetrics(ni),
		})
	}
	return out, nil
}

// nodeMetrics are the measurements a node reports in its node info.
func nodeMetrics(ni gyre.NodeInfo) *NodeMetrics {
	healthy := 0.0
	if ni.BrokerHealthy {
		healthy = 1
	}
	return &NodeMetrics{Interval: gyre.NodeInfoInterval.Seconds(), Items: map[string]float64{
		"gyre_publish_rate":   ni.PublishRate,
		"gyre_memory_bytes":   float64(ni.MemoryBytes),
		"gyre_broker_healthy": healthy,
	}}
}

// RPC calls a method of the application through Config.RPC. Without it
// every method is unknown: 104 "not found", as Centrifugo answers a
// method no RPC extension serves. An empty method is a bad request.
func (e *Executor) RPC(ctx context.Context, r *RPCRequest) (RPCResult, error) {
	if r.Method == "" {
		return RPCResult{}, &Error{107, "bad request: method required"}
	}
	if e.rpc == nil {
		return RPCResult{}, errRPCNotFound
	}
	data, err := e.rpc(ctx, r.Method, r.Params)
	if err != nil {
		return RPCResult{}, err
	}
	return RPCResult{Data: data}, nil
}
