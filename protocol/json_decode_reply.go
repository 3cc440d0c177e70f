package protocol

// JSON decoders of Reply, Error and the results a Reply carries.

func decodeReplyJSON(r *jsonReader, m *Reply) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "id":
			m.Id = r.u32()
		case "error":
			m.Error = readMessage(r, decodeErrorJSON)
		case "push":
			m.Push = readMessage(r, decodePushJSON)
		case "connect":
			m.Connect = readMessage(r, decodeConnectResultJSON)
		case "subscribe":
			m.Subscribe = readMessage(r, decodeSubscribeResultJSON)
		case "unsubscribe":
			m.Unsubscribe = readMessage(r, decodeUnsubscribeResultJSON)
		case "publish":
			m.Publish = readMessage(r, decodePublishResultJSON)
		case "presence":
			m.Presence = readMessage(r, decodePresenceResultJSON)
		case "presence_stats":
			m.PresenceStats = readMessage(r, decodePresenceStatsResultJSON)
		case "history":
			m.History = readMessage(r, decodeHistoryResultJSON)
		case "ping":
			m.Ping = readMessage(r, decodePingResultJSON)
		case "rpc":
			m.Rpc = readMessage(r, decodeRPCResultJSON)
		case "refresh":
			m.Refresh = readMessage(r, decodeRefreshResultJSON)
		case "sub_refresh":
			m.SubRefresh = readMessage(r, decodeSubRefreshResultJSON)
		default:
			r.skipValue()
		}
	}
}

func decodeErrorJSON(r *jsonReader, m *Error) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "code":
			m.Code = r.u32()
		case "message":
			m.Message = r.str()
		case "temporary":
			m.Temporary = r.boolean()
		default:
			r.skipValue()
		}
	}
}

func decodeConnectResultJSON(r *jsonReader, m *ConnectResult) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "client":
			m.Client = r.str()
		case "version":
			m.Version = r.str()
		case "expires":
			m.Expires = r.boolean()
		case "ttl":
			m.Ttl = r.u32()
		case "data":
			m.Data = r.raw()
		case "subs":
			m.Subs = readMessageMap(r, decodeSubscribeResultJSON)
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
		case "flag":
			m.Flag = r.i64()
		case "dict":
			m.Dict = readMessage(r, decodeDictionaryJSON)
		default:
			r.skipValue()
		}
	}
}

func decodeSubscribeResultJSON(r *jsonReader, m *SubscribeResult) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "expires":
			m.Expires = r.boolean()
		case "ttl":
			m.Ttl = r.u32()
		case "recoverable":
			m.Recoverable = r.boolean()
		case "epoch":
			m.Epoch = r.str()
		case "publications":
			m.Publications = readMessages(r, decodePublicationJSON)
		case "recovered":
			m.Recovered = r.boolean()
		case "offset":
			m.Offset = r.u64()
		case "positioned":
			m.Positioned = r.boolean()
		case "data":
			m.Data = r.raw()
		case "was_recovering":
			m.WasRecovering = r.boolean()
		case "delta":
			m.Delta = r.boolean()
		case "id":
			m.Id = r.i64()
		case "type":
			m.Type = r.i32()
		case "phase":
			m.Phase = r.i32()
		case "cursor":
			m.Cursor = r.str()
		case "state":
			m.State = readMessages(r, decodePublicationJSON)
		case "publish_debounce":
			m.PublishDebounce = r.u32()
		default:
			r.skipValue()
		}
	}
}

func decodeDictionaryJSON(r *jsonReader, m *Dictionary) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "id":
			m.Id = r.str()
		case "data":
			m.Data = r.raw()
		case "data_b64":
			m.DataB64 = r.str()
		default:
			r.skipValue()
		}
	}
}

func decodeUnsubscribeResultJSON(r *jsonReader, _ *UnsubscribeResult) { skipMembersJSON(r) }
func decodePublishResultJSON(r *jsonReader, _ *PublishResult)         { skipMembersJSON(r) }
func decodePingResultJSON(r *jsonReader, _ *PingResult)               { skipMembersJSON(r) }

func decodePresenceResultJSON(r *jsonReader, m *PresenceResult) {
	for first := true; r.field(&first); {
		if string(r.key) == "presence" {
			m.Presence = readMessageMap(r, decodeClientInfoJSON)
			continue
		}
		r.skipValue()
	}
}

func decodePresenceStatsResultJSON(r *jsonReader, m *PresenceStatsResult) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "num_clients":
			m.NumClients = r.u32()
		case "num_users":
			m.NumUsers = r.u32()
		default:
			r.skipValue()
		}
	}
}

func decodeHistoryResultJSON(r *jsonReader, m *HistoryResult) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "publications":
			m.Publications = readMessages(r, decodePublicationJSON)
		case "epoch":
			m.Epoch = r.str()
		case "offset":
			m.Offset = r.u64()
		default:
			r.skipValue()
		}
	}
}

func decodeRPCResultJSON(r *jsonReader, m *RPCResult) { decodeDataJSON(r, &m.Data) }

func decodeRefreshResultJSON(r *jsonReader, m *RefreshResult) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "client":
			m.Client = r.str()
		case "version":
			m.Version = r.str()
		case "expires":
			m.Expires = r.boolean()
		case "ttl":
			m.Ttl = r.u32()
		default:
			r.skipValue()
		}
	}
}

// decodeExpiryJSON serves SubRefreshResult and Refresh, which share their two fields.
func decodeExpiryJSON(r *jsonReader, expires *bool, ttl *uint32) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "expires":
			*expires = r.boolean()
		case "ttl":
			*ttl = r.u32()
		default:
			r.skipValue()
		}
	}
}

func decodeSubRefreshResultJSON(r *jsonReader, m *SubRefreshResult) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "expires":
			m.Expires = r.boolean()
		case "ttl":
			m.Ttl = r.u32()
		case "items":
			m.Items = readMessages(r, decodePublicationJSON)
		default:
			r.skipValue()
		}
	}
}
