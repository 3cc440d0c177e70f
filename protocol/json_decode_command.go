package protocol

// JSON decoders of Command and the requests it carries. Each reads the members of an
// object already opened by beginObject; unknown members are validated and skipped.

func decodeCommandJSON(r *jsonReader, m *Command) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "id":
			m.Id = r.u32()
		case "connect":
			m.Connect = readMessage(r, decodeConnectRequestJSON)
		case "subscribe":
			m.Subscribe = readMessage(r, decodeSubscribeRequestJSON)
		case "unsubscribe":
			m.Unsubscribe = readMessage(r, decodeUnsubscribeRequestJSON)
		case "publish":
			m.Publish = readMessage(r, decodePublishRequestJSON)
		case "presence":
			m.Presence = readMessage(r, decodePresenceRequestJSON)
		case "presence_stats":
			m.PresenceStats = readMessage(r, decodePresenceStatsRequestJSON)
		case "history":
			m.History = readMessage(r, decodeHistoryRequestJSON)
		case "ping":
			m.Ping = readMessage(r, decodePingRequestJSON)
		case "send":
			m.Send = readMessage(r, decodeSendRequestJSON)
		case "rpc":
			m.Rpc = readMessage(r, decodeRPCRequestJSON)
		case "refresh":
			m.Refresh = readMessage(r, decodeRefreshRequestJSON)
		case "sub_refresh":
			m.SubRefresh = readMessage(r, decodeSubRefreshRequestJSON)
		default:
			r.skipValue()
		}
	}
}

func decodeConnectRequestJSON(r *jsonReader, m *ConnectRequest) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "token":
			m.Token = r.str()
		case "data":
			m.Data = r.raw()
		case "subs":
			m.Subs = readMessageMap(r, decodeSubscribeRequestJSON)
		case "name":
			m.Name = r.str()
		case "version":
			m.Version = r.str()
		case "headers":
			m.Headers = readStringMap(r)
		case "flag":
			m.Flag = r.i64()
		case "dict":
			m.Dict = r.str()
		case "profile":
			m.Profile = r.str()
		default:
			r.skipValue()
		}
	}
}

func decodeSubscribeRequestJSON(r *jsonReader, m *SubscribeRequest) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "channel":
			m.Channel = r.str()
		case "token":
			m.Token = r.str()
		case "recover":
			m.Recover = r.boolean()
		case "epoch":
			m.Epoch = r.str()
		case "offset":
			m.Offset = r.u64()
		case "data":
			m.Data = r.raw()
		case "positioned":
			m.Positioned = r.boolean()
		case "recoverable":
			m.Recoverable = r.boolean()
		case "join_leave":
			m.JoinLeave = r.boolean()
		case "delta":
			m.Delta = r.str()
		case "tf":
			m.Tf = readMessage(r, decodeFilterNodeJSON)
		case "flag":
			m.Flag = r.i64()
		case "type":
			m.Type = r.i32()
		case "phase":
			m.Phase = r.i32()
		case "cursor":
			m.Cursor = r.str()
		case "limit":
			m.Limit = r.i32()
		case "asc":
			m.Asc = r.boolean()
		default:
			r.skipValue()
		}
	}
}

// decodeFilterNodeJSON recurses through nodes; beginObject's depth limit bounds it.
func decodeFilterNodeJSON(r *jsonReader, m *FilterNode) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "op":
			m.Op = r.str()
		case "key":
			m.Key = r.str()
		case "cmp":
			m.Cmp = r.str()
		case "val":
			m.Val = r.str()
		case "vals":
			m.Vals = readStrings(r)
		case "nodes":
			m.Nodes = readMessages(r, decodeFilterNodeJSON)
		default:
			r.skipValue()
		}
	}
}

// decodeChannelJSON serves the requests whose only field is the channel.
func decodeChannelJSON(r *jsonReader, channel *string) {
	for first := true; r.field(&first); {
		if string(r.key) == "channel" {
			*channel = r.str()
			continue
		}
		r.skipValue()
	}
}

func decodeUnsubscribeRequestJSON(r *jsonReader, m *UnsubscribeRequest) {
	decodeChannelJSON(r, &m.Channel)
}

func decodePresenceRequestJSON(r *jsonReader, m *PresenceRequest) {
	decodeChannelJSON(r, &m.Channel)
}

func decodePresenceStatsRequestJSON(r *jsonReader, m *PresenceStatsRequest) {
	decodeChannelJSON(r, &m.Channel)
}

func decodePublishRequestJSON(r *jsonReader, m *PublishRequest) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "channel":
			m.Channel = r.str()
		case "data":
			m.Data = r.raw()
		case "type":
			m.Type = r.i32()
		case "key":
			m.Key = r.str()
		case "removed":
			m.Removed = r.boolean()
		default:
			r.skipValue()
		}
	}
}

func decodeHistoryRequestJSON(r *jsonReader, m *HistoryRequest) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "channel":
			m.Channel = r.str()
		case "limit":
			m.Limit = r.i32()
		case "since":
			m.Since = readMessage(r, decodeStreamPositionJSON)
		case "reverse":
			m.Reverse = r.boolean()
		default:
			r.skipValue()
		}
	}
}

func decodeStreamPositionJSON(r *jsonReader, m *StreamPosition) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "offset":
			m.Offset = r.u64()
		case "epoch":
			m.Epoch = r.str()
		default:
			r.skipValue()
		}
	}
}

// skipMembersJSON reads an object whose message has no fields.
func skipMembersJSON(r *jsonReader) {
	for first := true; r.field(&first); {
		r.skipValue()
	}
}

func decodePingRequestJSON(r *jsonReader, _ *PingRequest) { skipMembersJSON(r) }

// decodeDataJSON serves the messages whose only field is data.
func decodeDataJSON(r *jsonReader, data *[]byte) {
	for first := true; r.field(&first); {
		if string(r.key) == "data" {
			*data = r.raw()
			continue
		}
		r.skipValue()
	}
}

func decodeSendRequestJSON(r *jsonReader, m *SendRequest) { decodeDataJSON(r, &m.Data) }

func decodeRPCRequestJSON(r *jsonReader, m *RPCRequest) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "data":
			m.Data = r.raw()
		case "method":
			m.Method = r.str()
		default:
			r.skipValue()
		}
	}
}

func decodeRefreshRequestJSON(r *jsonReader, m *RefreshRequest) {
	for first := true; r.field(&first); {
		if string(r.key) == "token" {
			m.Token = r.str()
			continue
		}
		r.skipValue()
	}
}

func decodeSubRefreshRequestJSON(r *jsonReader, m *SubRefreshRequest) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "channel":
			m.Channel = r.str()
		case "token":
			m.Token = r.str()
		case "type":
			m.Type = r.i32()
		case "track":
			m.Track = readMessages(r, decodeTrackBatchJSON)
		case "untrack":
			m.Untrack = readStrings(r)
		default:
			r.skipValue()
		}
	}
}

func decodeTrackBatchJSON(r *jsonReader, m *TrackBatch) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "signature":
			m.Signature = r.str()
		case "items":
			m.Items = readMessages(r, decodeKeyedItemJSON)
		default:
			r.skipValue()
		}
	}
}

func decodeKeyedItemJSON(r *jsonReader, m *KeyedItem) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "key":
			m.Key = r.str()
		case "version":
			m.Version = r.u64()
		default:
			r.skipValue()
		}
	}
}

func decodeEmulationRequestJSON(r *jsonReader, m *EmulationRequest) {
	for first := true; r.field(&first); {
		switch string(r.key) {
		case "node":
			m.Node = r.str()
		case "session":
			m.Session = r.str()
		case "data":
			m.Data = r.raw()
		default:
			r.skipValue()
		}
	}
}
