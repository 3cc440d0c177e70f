package protocol

// JSON encoders of Command and the requests it carries. Fields go out in proto field
// order and zero values are left out.

func appendCommandJSON(b []byte, m *Command) []byte {
	start := len(b)
	b = appendUintField(b, `,"id":`, uint64(m.Id))
	b = appendMessageField(b, `,"connect":`, m.Connect, appendConnectRequestJSON)
	b = appendMessageField(b, `,"subscribe":`, m.Subscribe, appendSubscribeRequestJSON)
	b = appendMessageField(b, `,"unsubscribe":`, m.Unsubscribe, appendUnsubscribeRequestJSON)
	b = appendMessageField(b, `,"publish":`, m.Publish, appendPublishRequestJSON)
	b = appendMessageField(b, `,"presence":`, m.Presence, appendPresenceRequestJSON)
	b = appendMessageField(b, `,"presence_stats":`, m.PresenceStats, appendPresenceStatsRequestJSON)
	b = appendMessageField(b, `,"history":`, m.History, appendHistoryRequestJSON)
	b = appendMessageField(b, `,"ping":`, m.Ping, appendPingRequestJSON)
	b = appendMessageField(b, `,"send":`, m.Send, appendSendRequestJSON)
	b = appendMessageField(b, `,"rpc":`, m.Rpc, appendRPCRequestJSON)
	b = appendMessageField(b, `,"refresh":`, m.Refresh, appendRefreshRequestJSON)
	b = appendMessageField(b, `,"sub_refresh":`, m.SubRefresh, appendSubRefreshRequestJSON)
	return closeObject(b, start)
}

func appendConnectRequestJSON(b []byte, m *ConnectRequest) []byte {
	start := len(b)
	b = appendStringField(b, `,"token":`, m.Token)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendMessageMapField(b, `,"subs":`, m.Subs, appendSubscribeRequestJSON)
	b = appendStringField(b, `,"name":`, m.Name)
	b = appendStringField(b, `,"version":`, m.Version)
	b = appendStringMapField(b, `,"headers":`, m.Headers)
	b = appendIntField(b, `,"flag":`, m.Flag)
	b = appendStringField(b, `,"dict":`, m.Dict)
	b = appendStringField(b, `,"profile":`, m.Profile)
	return closeObject(b, start)
}

func appendSubscribeRequestJSON(b []byte, m *SubscribeRequest) []byte {
	start := len(b)
	b = appendStringField(b, `,"channel":`, m.Channel)
	b = appendStringField(b, `,"token":`, m.Token)
	b = appendBoolField(b, `,"recover":`, m.Recover)
	b = appendStringField(b, `,"epoch":`, m.Epoch)
	b = appendUintField(b, `,"offset":`, m.Offset)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendBoolField(b, `,"positioned":`, m.Positioned)
	b = appendBoolField(b, `,"recoverable":`, m.Recoverable)
	b = appendBoolField(b, `,"join_leave":`, m.JoinLeave)
	b = appendStringField(b, `,"delta":`, m.Delta)
	b = appendMessageField(b, `,"tf":`, m.Tf, appendFilterNodeJSON)
	b = appendIntField(b, `,"flag":`, m.Flag)
	b = appendIntField(b, `,"type":`, int64(m.Type))
	b = appendIntField(b, `,"phase":`, int64(m.Phase))
	b = appendStringField(b, `,"cursor":`, m.Cursor)
	b = appendIntField(b, `,"limit":`, int64(m.Limit))
	b = appendBoolField(b, `,"asc":`, m.Asc)
	return closeObject(b, start)
}

func appendFilterNodeJSON(b []byte, m *FilterNode) []byte {
	start := len(b)
	b = appendStringField(b, `,"op":`, m.Op)
	b = appendStringField(b, `,"key":`, m.Key)
	b = appendStringField(b, `,"cmp":`, m.Cmp)
	b = appendStringField(b, `,"val":`, m.Val)
	b = appendStringsField(b, `,"vals":`, m.Vals)
	b = appendMessagesField(b, `,"nodes":`, m.Nodes, appendFilterNodeJSON)
	return closeObject(b, start)
}

func appendChannelJSON(b []byte, channel string) []byte {
	start := len(b)
	b = appendStringField(b, `,"channel":`, channel)
	return closeObject(b, start)
}

func appendUnsubscribeRequestJSON(b []byte, m *UnsubscribeRequest) []byte {
	return appendChannelJSON(b, m.Channel)
}

func appendPresenceRequestJSON(b []byte, m *PresenceRequest) []byte {
	return appendChannelJSON(b, m.Channel)
}

func appendPresenceStatsRequestJSON(b []byte, m *PresenceStatsRequest) []byte {
	return appendChannelJSON(b, m.Channel)
}

func appendPublishRequestJSON(b []byte, m *PublishRequest) []byte {
	start := len(b)
	b = appendStringField(b, `,"channel":`, m.Channel)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendIntField(b, `,"type":`, int64(m.Type))
	b = appendStringField(b, `,"key":`, m.Key)
	b = appendBoolField(b, `,"removed":`, m.Removed)
	return closeObject(b, start)
}

func appendHistoryRequestJSON(b []byte, m *HistoryRequest) []byte {
	start := len(b)
	b = appendStringField(b, `,"channel":`, m.Channel)
	b = appendIntField(b, `,"limit":`, int64(m.Limit))
	b = appendMessageField(b, `,"since":`, m.Since, appendStreamPositionJSON)
	b = appendBoolField(b, `,"reverse":`, m.Reverse)
	return closeObject(b, start)
}

func appendStreamPositionJSON(b []byte, m *StreamPosition) []byte {
	start := len(b)
	b = appendUintField(b, `,"offset":`, m.Offset)
	b = appendStringField(b, `,"epoch":`, m.Epoch)
	return closeObject(b, start)
}

func appendPingRequestJSON(b []byte, _ *PingRequest) []byte { return append(b, '{', '}') }

func appendDataJSON(b []byte, data []byte) []byte {
	start := len(b)
	b = appendRawField(b, `,"data":`, data)
	return closeObject(b, start)
}

func appendSendRequestJSON(b []byte, m *SendRequest) []byte { return appendDataJSON(b, m.Data) }

func appendRPCRequestJSON(b []byte, m *RPCRequest) []byte {
	start := len(b)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendStringField(b, `,"method":`, m.Method)
	return closeObject(b, start)
}

func appendRefreshRequestJSON(b []byte, m *RefreshRequest) []byte {
	start := len(b)
	b = appendStringField(b, `,"token":`, m.Token)
	return closeObject(b, start)
}

func appendSubRefreshRequestJSON(b []byte, m *SubRefreshRequest) []byte {
	start := len(b)
	b = appendStringField(b, `,"channel":`, m.Channel)
	b = appendStringField(b, `,"token":`, m.Token)
	b = appendIntField(b, `,"type":`, int64(m.Type))
	b = appendMessagesField(b, `,"track":`, m.Track, appendTrackBatchJSON)
	b = appendStringsField(b, `,"untrack":`, m.Untrack)
	return closeObject(b, start)
}

func appendTrackBatchJSON(b []byte, m *TrackBatch) []byte {
	start := len(b)
	b = appendStringField(b, `,"signature":`, m.Signature)
	b = appendMessagesField(b, `,"items":`, m.Items, appendKeyedItemJSON)
	return closeObject(b, start)
}

func appendKeyedItemJSON(b []byte, m *KeyedItem) []byte {
	start := len(b)
	b = appendStringField(b, `,"key":`, m.Key)
	b = appendUintField(b, `,"version":`, m.Version)
	return closeObject(b, start)
}

func appendEmulationRequestJSON(b []byte, m *EmulationRequest) []byte {
	start := len(b)
	b = appendStringField(b, `,"node":`, m.Node)
	b = appendStringField(b, `,"session":`, m.Session)
	b = appendRawField(b, `,"data":`, m.Data)
	return closeObject(b, start)
}
