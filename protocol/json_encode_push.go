package protocol

// JSON encoders of Push and the messages it carries: the broadcast hot path.

func appendPushJSON(b []byte, m *Push) []byte {
	start := len(b)
	b = appendIntField(b, `,"id":`, m.Id)
	b = appendStringField(b, `,"channel":`, m.Channel)
	b = appendMessageField(b, `,"pub":`, m.Pub, appendPublicationJSON)
	b = appendMessageField(b, `,"join":`, m.Join, appendJoinJSON)
	b = appendMessageField(b, `,"leave":`, m.Leave, appendLeaveJSON)
	b = appendMessageField(b, `,"unsubscribe":`, m.Unsubscribe, appendUnsubscribeJSON)
	b = appendMessageField(b, `,"message":`, m.Message, appendMessageJSON)
	b = appendMessageField(b, `,"subscribe":`, m.Subscribe, appendSubscribeJSON)
	b = appendMessageField(b, `,"connect":`, m.Connect, appendConnectJSON)
	b = appendMessageField(b, `,"disconnect":`, m.Disconnect, appendDisconnectJSON)
	b = appendMessageField(b, `,"refresh":`, m.Refresh, appendRefreshJSON)
	return closeObject(b, start)
}

func appendClientInfoJSON(b []byte, m *ClientInfo) []byte {
	start := len(b)
	// user is empty for anonymous clients, and still there.
	b = appendStringFieldAlways(b, `,"user":`, m.User)
	b = appendStringFieldAlways(b, `,"client":`, m.Client)
	b = appendRawField(b, `,"conn_info":`, m.ConnInfo)
	b = appendRawField(b, `,"chan_info":`, m.ChanInfo)
	return closeObject(b, start)
}

func appendPublicationJSON(b []byte, m *Publication) []byte {
	start := len(b)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendMessageField(b, `,"info":`, m.Info, appendClientInfoJSON)
	b = appendUintField(b, `,"offset":`, m.Offset)
	b = appendStringMapField(b, `,"tags":`, m.Tags)
	b = appendBoolField(b, `,"delta":`, m.Delta)
	b = appendIntField(b, `,"time":`, m.Time)
	b = appendStringField(b, `,"channel":`, m.Channel)
	b = appendStringField(b, `,"key":`, m.Key)
	b = appendBoolField(b, `,"removed":`, m.Removed)
	b = appendIntField(b, `,"score":`, m.Score)
	b = appendStringField(b, `,"epoch":`, m.Epoch)
	b = appendRawField(b, `,"prev_data":`, m.PrevData)
	b = appendUintField(b, `,"version":`, m.Version)
	return closeObject(b, start)
}

func appendInfoJSON(b []byte, info *ClientInfo) []byte {
	start := len(b)
	b = appendMessageField(b, `,"info":`, info, appendClientInfoJSON)
	return closeObject(b, start)
}

func appendJoinJSON(b []byte, m *Join) []byte   { return appendInfoJSON(b, m.Info) }
func appendLeaveJSON(b []byte, m *Leave) []byte { return appendInfoJSON(b, m.Info) }

func appendUnsubscribeJSON(b []byte, m *Unsubscribe) []byte {
	start := len(b)
	b = appendUintField(b, `,"code":`, uint64(m.Code))
	b = appendStringField(b, `,"reason":`, m.Reason)
	return closeObject(b, start)
}

func appendMessageJSON(b []byte, m *Message) []byte { return appendDataJSON(b, m.Data) }

func appendSubscribeJSON(b []byte, m *Subscribe) []byte {
	start := len(b)
	b = appendBoolField(b, `,"recoverable":`, m.Recoverable)
	b = appendStringField(b, `,"epoch":`, m.Epoch)
	b = appendUintField(b, `,"offset":`, m.Offset)
	b = appendBoolField(b, `,"positioned":`, m.Positioned)
	b = appendRawField(b, `,"data":`, m.Data)
	return closeObject(b, start)
}

func appendConnectJSON(b []byte, m *Connect) []byte {
	start := len(b)
	b = appendStringField(b, `,"client":`, m.Client)
	b = appendStringField(b, `,"version":`, m.Version)
	b = appendRawField(b, `,"data":`, m.Data)
	b = appendMessageMapField(b, `,"subs":`, m.Subs, appendSubscribeResultJSON)
	b = appendBoolField(b, `,"expires":`, m.Expires)
	b = appendUintField(b, `,"ttl":`, uint64(m.Ttl))
	b = appendUintField(b, `,"ping":`, uint64(m.Ping))
	b = appendBoolField(b, `,"pong":`, m.Pong)
	b = appendStringField(b, `,"session":`, m.Session)
	b = appendStringField(b, `,"node":`, m.Node)
	b = appendIntField(b, `,"time":`, m.Time)
	return closeObject(b, start)
}

func appendDisconnectJSON(b []byte, m *Disconnect) []byte {
	start := len(b)
	b = appendUintField(b, `,"code":`, uint64(m.Code))
	b = appendStringField(b, `,"reason":`, m.Reason)
	b = appendBoolField(b, `,"reconnect":`, m.Reconnect)
	return closeObject(b, start)
}

func appendRefreshJSON(b []byte, m *Refresh) []byte { return appendExpiryJSON(b, m.Expires, m.Ttl) }
