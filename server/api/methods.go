package api

import (
	"encoding/json"
	"errors"

	"github.com/gyrehq/gyre"
)

func requireChannel(ch string) error {
	if ch == "" {
		return &apiError{107, "bad request: channel required"}
	}
	return nil
}

// decodePublish reads a publish command into what to publish.
func decodePublish(raw json.RawMessage) (gyre.PublishItem, error) {
	var req publishRequest
	if err := decode(raw, &req); err != nil {
		return gyre.PublishItem{}, err
	}
	if err := requireChannel(req.Channel); err != nil {
		return gyre.PublishItem{}, err
	}
	data, err := req.bytes()
	if err != nil {
		return gyre.PublishItem{}, err
	}
	return gyre.PublishItem{Channel: req.Channel, Data: data, Options: req.options()}, nil
}

// decodeBroadcast reads a broadcast command into one item per channel; an
// empty channel name gets an item with Err set, not published.
func decodeBroadcast(raw json.RawMessage) ([]gyre.PublishItem, error) {
	var req broadcastRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if len(req.Channels) == 0 {
		return nil, &apiError{107, "bad request: channels required"}
	}
	data, err := req.bytes()
	if err != nil {
		return nil, err
	}
	opts := req.options()
	items := make([]gyre.PublishItem, len(req.Channels))
	for i, ch := range req.Channels {
		items[i] = gyre.PublishItem{Channel: ch, Data: data, Options: opts}
		if ch == "" {
			items[i].Err = errNoChannel
		}
	}
	return items, nil
}

var errNoChannel = &apiError{107, "bad request: channel required"}

func toPublishResult(r gyre.PublishResult) publishResult {
	return publishResult{Offset: r.Offset, Epoch: r.Epoch}
}

func (h *Handler) publish(raw json.RawMessage) (any, error) {
	item, err := decodePublish(raw)
	if err != nil {
		return nil, err
	}
	items := [1]gyre.PublishItem{item}
	h.node.PublishMany(items[:])
	if err := items[0].Err; err != nil {
		return nil, h.failed("publish", item.Channel, err)
	}
	return toPublishResult(items[0].Result), nil
}

func (h *Handler) broadcast(raw json.RawMessage) (any, error) {
	items, err := decodeBroadcast(raw)
	if err != nil {
		return nil, err
	}
	var g publishGroup
	g.addBroadcast(0, items)
	replies := make([]batchReply, 1)
	g.publish(h, replies)
	return replies[0].result, nil
}

func (h *Handler) subscribe(raw json.RawMessage) (any, error) {
	var req subscribeRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := requireChannel(req.Channel); err != nil {
		return nil, err
	}
	if req.User == "" && req.Client == "" {
		return nil, &apiError{107, "bad request: user or client required"}
	}
	return empty{}, h.node.Subscribe(req.User, req.Channel, gyre.ClientFilter{ClientID: req.Client, Session: req.Session})
}

func (h *Handler) unsubscribe(raw json.RawMessage) (any, error) {
	var req unsubscribeRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := requireChannel(req.Channel); err != nil {
		return nil, err
	}
	return empty{}, h.node.Unsubscribe(req.User, req.Channel, gyre.ClientFilter{ClientID: req.Client, Session: req.Session})
}

func (h *Handler) disconnect(raw json.RawMessage) (any, error) {
	var req disconnectRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	d := gyre.DisconnectForceNoReconnect
	if req.Disconnect != nil {
		if req.Disconnect.Code < 3000 || req.Disconnect.Code > 4999 {
			return nil, &apiError{107, "bad request: disconnect code must be in 3000..4999"}
		}
		d = &gyre.Disconnect{Code: req.Disconnect.Code, Reason: req.Disconnect.Reason}
	}
	return empty{}, h.node.Disconnect(req.User, d, gyre.ClientFilter{ClientID: req.Client, Session: req.Session}, req.Whitelist)
}

func (h *Handler) refresh(raw json.RawMessage) (any, error) {
	var req refreshRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	return empty{}, h.node.Refresh(req.User, gyre.ClientFilter{ClientID: req.Client, Session: req.Session}, req.Expired, req.ExpireAt, req.Info)
}

func (h *Handler) presence(raw json.RawMessage) (any, error) {
	var req channelRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := requireChannel(req.Channel); err != nil {
		return nil, err
	}
	m, err := h.node.Presence(req.Channel)
	if err != nil {
		return nil, err
	}
	out := presenceResult{Presence: make(map[string]clientInfo, len(m))}
	for id, ci := range m {
		out.Presence[id] = toClientInfo(ci)
	}
	return out, nil
}

func toClientInfo(ci *gyre.ClientInfo) clientInfo {
	return clientInfo{User: ci.UserID, Client: ci.ClientID, ConnInfo: rawJSON(ci.ConnInfo), ChanInfo: rawJSON(ci.ChanInfo)}
}

// rawJSON keeps valid JSON as is and drops anything else, so that a
// response is always valid JSON.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return b
}

func (h *Handler) presenceStats(raw json.RawMessage) (any, error) {
	var req channelRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := requireChannel(req.Channel); err != nil {
		return nil, err
	}
	st, err := h.node.PresenceStats(req.Channel)
	if err != nil {
		return nil, err
	}
	return presenceStatsResult{NumClients: st.NumClients, NumUsers: st.NumUsers}, nil
}

func (h *Handler) history(raw json.RawMessage) (any, error) {
	var req historyRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := requireChannel(req.Channel); err != nil {
		return nil, err
	}
	var since *gyre.StreamPosition
	if req.Since != nil {
		since = &gyre.StreamPosition{Offset: req.Since.Offset, Epoch: req.Since.Epoch}
	}
	pubs, sp, err := h.node.History(req.Channel, req.Limit, since, req.Reverse)
	if err != nil {
		return nil, err
	}
	out := historyResult{Publications: make([]publication, 0, len(pubs)), Epoch: sp.Epoch, Offset: sp.Offset}
	for _, p := range pubs {
		pub := publication{Data: p.Data, Offset: p.Offset, Tags: p.Tags}
		if !json.Valid(p.Data) {
			// Binary data published with b64data cannot be embedded.
			b, _ := json.Marshal(p.Data)
			pub.Data = b
		}
		if p.Info != nil {
			ci := toClientInfo(p.Info)
			pub.Info = &ci
		}
		out.Publications = append(out.Publications, pub)
	}
	return out, nil
}

func (h *Handler) historyRemove(raw json.RawMessage) (any, error) {
	var req channelRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := requireChannel(req.Channel); err != nil {
		return nil, err
	}
	return empty{}, h.node.RemoveHistory(req.Channel)
}

func (h *Handler) channels(raw json.RawMessage) (any, error) {
	var req channelsRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	m, err := h.node.Channels(req.Pattern)
	if err != nil {
		var ge *gyre.Error
		if !errors.As(err, &ge) {
			return nil, &apiError{107, "bad request: " + err.Error()}
		}
		return nil, err
	}
	out := channelsResult{Channels: make(map[string]channelInfo, len(m))}
	for ch, ci := range m {
		out.Channels[ch] = channelInfo{NumClients: ci.NumClients}
	}
	return out, nil
}

func (h *Handler) info(raw json.RawMessage) (any, error) {
	infos := h.node.Info()
	out := infoResult{Nodes: make([]nodeInfo, 0, len(infos))}
	for _, ni := range infos {
		out.Nodes = append(out.Nodes, nodeInfo{
			UID: ni.ID, Name: ni.Name, Version: ni.Version, NumClients: ni.NumClients,
			NumUsers: ni.NumUsers, NumChannels: ni.NumChannels, NumSubs: ni.NumSubs,
			Uptime: int64(ni.Uptime.Seconds()),
		})
	}
	return out, nil
}
