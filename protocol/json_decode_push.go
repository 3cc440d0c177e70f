package protocol

// JSON decoders of Push and the messages it carries.

func decodePushJSON(r *jsonReader, m *Push) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "id":
			m.Id = r.i64()
		case "channel":
			m.Channel = r.str()
		case "pub":
			m.Pub = readMessage(r, decodePublicationJSON)
		case "join":
			m.Join = readMessage(r, decodeJoinJSON)
		case "leave":
			m.Leave = readMessage(r, decodeLeaveJSON)
		case "unsubscribe":
			m.Unsubscribe = readMessage(r, decodeUnsubscribeJSON)
		case "message":
			m.Message = readMessage(r, decodeMessageJSON)
		case "subscribe":
			m.Subscribe = readMessage(r, decodeSubscribeJSON)
		case "connect":
			m.Connect = readMessage(r, decodeConnectJSON)
		case "disconnect":
			m.Disconnect = readMessage(r, decodeDisconnectJSON)
		case "refresh":
			m.Refresh = readMessage(r, decodeRefreshJSON)
		default:
			r.skipValue()
		}
	}
}

func decodeClientInfoJSON(r *jsonReader, m *ClientInfo) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "user":
			m.User = r.str()
		case "client":
			m.Client = r.str()
		case "conn_info":
			m.ConnInfo = r.raw()
		case "chan_info":
			m.ChanInfo = r.raw()
		default:
			r.skipValue()
		}
	}
}

func decodePublicationJSON(r *jsonReader, m *Publication) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "data":
			m.Data = r.raw()
		case "info":
			m.Info = readMessage(r, decodeClientInfoJSON)
		case "offset":
			m.Offset = r.u64()
		case "tags":
			m.Tags = readStringMap(r)
		case "delta":
			m.Delta = r.boolean()
		case "time":
			m.Time = r.i64()
		case "channel":
			m.Channel = r.str()
		case "key":
			m.Key = r.str()
		case "removed":
			m.Removed = r.boolean()
		case "score":
			m.Score = r.i64()
		case "epoch":
			m.Epoch = r.str()
		case "prev_data":
			m.PrevData = r.raw()
		case "version":
			m.Version = r.u64()
		default:
			r.skipValue()
		}
	}
}

// decodeInfoJSON serves Join and Leave, whose only field is the client info.
func decodeInfoJSON(r *jsonReader, info **ClientInfo) {
	for first := true; r.field(&first); {
		if string(r.key) == "info" {
			*info = readMessage(r, decodeClientInfoJSON)
			continue
		}
		r.skipValue()
	}
}

func decodeJoinJSON(r *jsonReader, m *Join)   { decodeInfoJSON(r, &m.Info) }
func decodeLeaveJSON(r *jsonReader, m *Leave) { decodeInfoJSON(r, &m.Info) }

func decodeUnsubscribeJSON(r *jsonReader, m *Unsubscribe) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "code":
			m.Code = r.u32()
		case "reason":
			m.Reason = r.str()
		default:
			r.skipValue()
		}
	}
}

func decodeMessageJSON(r *jsonReader, m *Message) { decodeDataJSON(r, &m.Data) }

func decodeSubscribeJSON(r *jsonReader, m *Subscribe) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "recoverable":
			m.Recoverable = r.boolean()
		case "epoch":
			m.Epoch = r.str()
		case "offset":
			m.Offset = r.u64()
		case "positioned":
			m.Positioned = r.boolean()
		case "data":
			m.Data = r.raw()
		default:
			r.skipValue()
		}
	}
}

func decodeConnectJSON(r *jsonReader, m *Connect) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "client":
			m.Client = r.str()
		case "version":
			m.Version = r.str()
		case "data":
			m.Data = r.raw()
		case "subs":
			m.Subs = readMessageMap(r, decodeSubscribeResultJSON)
		case "expires":
			m.Expires = r.boolean()
		case "ttl":
			m.Ttl = r.u32()
		case "ping":
			m.Ping = r.u32()
		case "pong":
			m.Pong = r.boolean()
		case "session":
			m.Session = r.str()
		case "node":
			m.Node = r.str()
		case "time":
			m.Time = r.i64()
		default:
			r.skipValue()
		}
	}
}

func decodeDisconnectJSON(r *jsonReader, m *Disconnect) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "code":
			m.Code = r.u32()
		case "reason":
			m.Reason = r.str()
		case "reconnect":
			m.Reconnect = r.boolean()
		default:
			r.skipValue()
		}
	}
}

func decodeRefreshJSON(r *jsonReader, m *Refresh) { decodeExpiryJSON(r, &m.Expires, &m.Ttl) }
