package protocol

// JSON encoders of Reply, Error and the results a Reply carries.

func appendReplyJSON(b []byte, m *Reply) []byte {
	start := len(b)
	b = appendUintField(b, `,"id":`, uint64(m.Id))
	b = appendMessageField(b, `,"error":`, m.Error, appendErrorJSON)
	b = appendMessageField(b, `,"push":`, m.Push, appendPushJSON)
	b = appendMessageField(b, `,"connect":`, m.Connect, appendConnectResultJSON)
	b = appendMessageField(b, `,"subscribe":`, m.Subscribe, appendSubscribeResultJSON)
	b = appendMessageField(b, `,"unsubscribe":`, m.Unsubscribe, appendUnsubscribeResultJSON)
	b = appendMessageField(b, `,"publish":`, m.Publish, appendPublishResultJSON)
	b = appendMessageField(b, `,"presence":`, m.Presence, appendPresenceResultJSON)
	b = appendMessageField(b, `,"presence_stats":`, m.PresenceStats, appendPresenceStatsResultJSON)
	b = appendMessageField(b, `,"history":`, m.History, appendHistoryResultJSON)
	b = appendMessageField(b, `,"ping":`, m.Ping, appendPingResultJSON)
	b = appendMessageField(b, `,"rpc":`, m.Rpc, appendRPCResultJSON)
	b = appendMessageField(b, `,"refresh":`, m.Refresh, appendRefreshResultJSON)
	b = appendMessageField(b, `,"sub_refresh":`, m.SubRefresh, appendSubRefreshResultJSON)
	return closeObject(b, start)
}

func appendErrorJSON(b []byte, m *Error) []byte {
	start := len(b)
	b = appendUintField(b, `,"code":`, uint64(m.Code))
	b = appendStringField(b, `,"message":`, m.Message)
	b = appendBoolField(b, `,"temporary":`, m.Temporary)
	return closeObject(b, start)
}

func appendConnectResultJSON(b []byte, m *ConnectResult) []byte {
	start := len(b)
	b = appendStringField(b, `,"client":`, m.Client)
	b = appendStringField(b, `,"version":`, m.Version)
	b = appendBoolField(b, `,"expires":`, m.Expires)
	b = appendUintField(b, `,"ttl":`, uint64(m.Ttl))
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendMessageMapField(b, `,"subs":`, m.Subs, appendSubscribeResultJSON)
	b = appendUintField(b, `,"ping":`, uint64(m.Ping))
	b = appendBoolField(b, `,"pong":`, m.Pong)
	b = appendStringField(b, `,"session":`, m.Session)
	b = appendStringField(b, `,"node":`, m.Node)
	b = appendIntField(b, `,"time":`, m.Time)
	b = appendIntField(b, `,"flag":`, m.Flag)
	b = appendMessageField(b, `,"dict":`, m.Dict, appendDictionaryJSON)
	return closeObject(b, start)
}

// appendDictionaryJSON: the content travels base64 in data_b64 on JSON
// connections; data, like every bytes field here, would be raw JSON.
func appendDictionaryJSON(b []byte, m *Dictionary) []byte {
	start := len(b)
	b = appendStringField(b, `,"id":`, m.Id)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendStringField(b, `,"data_b64":`, m.DataB64)
	return closeObject(b, start)
}

func appendSubscribeResultJSON(b []byte, m *SubscribeResult) []byte {
	start := len(b)
	b = appendBoolField(b, `,"expires":`, m.Expires)
	b = appendUintField(b, `,"ttl":`, uint64(m.Ttl))
	b = appendBoolField(b, `,"recoverable":`, m.Recoverable)
	b = appendStringField(b, `,"epoch":`, m.Epoch)
	b = appendMessagesField(b, `,"publications":`, m.Publications, appendPublicationJSON)
	b = appendBoolField(b, `,"recovered":`, m.Recovered)
	b = appendUintField(b, `,"offset":`, m.Offset)
	b = appendBoolField(b, `,"positioned":`, m.Positioned)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendBoolField(b, `,"was_recovering":`, m.WasRecovering)
	b = appendBoolField(b, `,"delta":`, m.Delta)
	b = appendIntField(b, `,"id":`, m.Id)
	b = appendIntField(b, `,"type":`, int64(m.Type))
	b = appendIntField(b, `,"phase":`, int64(m.Phase))
	b = appendStringField(b, `,"cursor":`, m.Cursor)
	b = appendMessagesField(b, `,"state":`, m.State, appendPublicationJSON)
	b = appendUintField(b, `,"publish_debounce":`, uint64(m.PublishDebounce))
	return closeObject(b, start)
}

func appendUnsubscribeResultJSON(b []byte, _ *UnsubscribeResult) []byte { return append(b, '{', '}') }
func appendPublishResultJSON(b []byte, _ *PublishResult) []byte         { return append(b, '{', '}') }
func appendPingResultJSON(b []byte, _ *PingResult) []byte               { return append(b, '{', '}') }

func appendPresenceResultJSON(b []byte, m *PresenceResult) []byte {
	if len(m.Presence) == 0 {
		// The map is on the wire also when empty: centrifuge-js hands
		// it to the application as the presence's clients, which would
		// be undefined for a channel nobody is in.
		return append(b, `{"presence":{}}`...)
	}
	start := len(b)
	b = appendMessageMapField(b, `,"presence":`, m.Presence, appendClientInfoJSON)
	return closeObject(b, start)
}

func appendPresenceStatsResultJSON(b []byte, m *PresenceStatsResult) []byte {
	start := len(b)
	b = appendUintFieldAlways(b, `,"num_clients":`, uint64(m.NumClients))
	b = appendUintFieldAlways(b, `,"num_users":`, uint64(m.NumUsers))
	return closeObject(b, start)
}

func appendHistoryResultJSON(b []byte, m *HistoryResult) []byte {
	start := len(b)
	b = appendMessagesFieldAlways(b, `,"publications":`, m.Publications, appendPublicationJSON)
	b = appendStringFieldAlways(b, `,"epoch":`, m.Epoch)
	b = appendUintFieldAlways(b, `,"offset":`, m.Offset)
	return closeObject(b, start)
}

func appendRPCResultJSON(b []byte, m *RPCResult) []byte { return appendDataJSON(b, m.Data) }

func appendRefreshResultJSON(b []byte, m *RefreshResult) []byte {
	start := len(b)
	b = appendStringField(b, `,"client":`, m.Client)
	b = appendStringField(b, `,"version":`, m.Version)
	b = appendBoolField(b, `,"expires":`, m.Expires)
	b = appendUintField(b, `,"ttl":`, uint64(m.Ttl))
	return closeObject(b, start)
}

func appendExpiryJSON(b []byte, expires bool, ttl uint32) []byte {
	start := len(b)
	b = appendBoolField(b, `,"expires":`, expires)
	b = appendUintField(b, `,"ttl":`, uint64(ttl))
	return closeObject(b, start)
}

func appendSubRefreshResultJSON(b []byte, m *SubRefreshResult) []byte {
	start := len(b)
	b = appendBoolField(b, `,"expires":`, m.Expires)
	b = appendUintField(b, `,"ttl":`, uint64(m.Ttl))
	b = appendMessagesField(b, `,"items":`, m.Items, appendPublicationJSON)
	return closeObject(b, start)
}
