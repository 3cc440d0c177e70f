package api

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/proto"

	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// Method is one method of the API, as every front end serves it. The
// table of them (methodTable) is the only list of the API's methods: the
// HTTP handler (POST <prefix>/<method>, batch commands and the legacy
// form), the gRPC service (server/grpcapi), the admin API and its web
// app, and docs/api.md all read it. Adding a method is adding its entry.
type Method struct {
	// Name is the method in the HTTP API: the path POST <prefix>/<Name>,
	// the key of its command in a batch, "method" in the legacy form, the
	// field of its command and reply in a gRPC batch, and the label of
	// its calls in the metrics.
	Name string
	// Summary is one sentence saying what the method does: the method list
	// of docs/api.md and the admin web app show it.
	Summary string
	// GRPC is the method's rpc in service CentrifugoApi, whose request and
	// response messages are GRPC+"Request" and GRPC+"Response".
	GRPC string
	// Legacy is the method's number in the MethodType enum of Centrifugo's
	// API schema, which clients of the legacy form may send instead of its
	// name; -1 when the enum has none for it.
	Legacy int
	// Admin lists the fields the admin web app's Actions page asks for to
	// send the method, each a field of the request: channel, channels
	// (a list), user, key, data (JSON) or tags (an object of strings).
	// Empty: the page does not offer the method (the admin API runs it all
	// the same).
	Admin []string

	// newRequest makes an empty request of the method.
	newRequest func() any
	// decodeJSON reads the method's request from JSON.
	decodeJSON func(raw json.RawMessage) (any, error)
	// run runs the method on the executor; req is what decodeJSON or
	// fromProto made.
	run func(e *Executor, ctx context.Context, req any) (any, error)
	// fromProto converts the gRPC request message (refusing what the JSON
	// API could not have been sent) and toProto the result into the
	// result message: what the response message's result field or the
	// batch reply's field of the method holds.
	fromProto func(msg proto.Message) (any, *Error)
	toProto   func(res any) proto.Message
}

// def completes the entry m of a method whose request is a Req and
// result a Res: run is the Executor's method, in and out convert from
// the gRPC request message and into the gRPC result message.
func def[Req, Res any, PReq, PRes proto.Message](
	m Method,
	run func(*Executor, context.Context, *Req) (Res, error),
	in func(PReq) (*Req, *Error),
	out func(Res) PRes,
) *Method {
	m.newRequest = func() any { return new(Req) }
	m.decodeJSON = func(raw json.RawMessage) (any, error) {
		if _, batch := any((*Req)(nil)).(*BatchRequest); batch {
			// Straight to its reader: json.Unmarshal would check and skip
			// the whole batch before handing it over.
			r, err := readBatchJSON(raw)
			if err != nil {
				return nil, err
			}
			return r, nil
		}
		r := new(Req)
		if pr, ok := any(r).(*PublishRequest); ok {
			if readPublishJSON(raw, pr) {
				return r, nil
			}
			*pr = PublishRequest{} // what it read, encoding/json reads again
		}
		if br, ok := any(r).(*BroadcastRequest); ok {
			if readBroadcastJSON(raw, br) {
				return r, nil
			}
			*br = BroadcastRequest{}
		}
		if err := decode(raw, r); err != nil {
			return nil, err
		}
		return r, nil
	}
	m.run = func(e *Executor, ctx context.Context, req any) (any, error) {
		return box(run(e, ctx, req.(*Req)))
	}
	m.fromProto = func(msg proto.Message) (any, *Error) {
		r, err := in(msg.(PReq))
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	m.toProto = func(res any) proto.Message { return out(res.(Res)) }
	return &m
}

// box gives a method's result as any, and no result with an error.
func box[Res any](res Res, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

// methodTable is the API: its methods in the order docs/api.md lists
// them. It is set in init, as its entries refer to the executor's
// methods, which look methods up in it.
var methodTable []*Method

// methodsByName and methodsByLegacy index methodTable by Method.Name and
// Method.Legacy.
var (
	methodsByName   map[string]*Method
	methodsByLegacy map[uint64]*Method
)

func init() {
	methodTable = table()
	methodsByName = make(map[string]*Method, len(methodTable))
	methodsByLegacy = make(map[uint64]*Method, len(methodTable))
	for _, m := range methodTable {
		if methodsByName[m.Name] != nil {
			panic("api: method " + m.Name + " twice in the table")
		}
		methodsByName[m.Name] = m
		if m.Legacy >= 0 {
			methodsByLegacy[uint64(m.Legacy)] = m
		}
	}
}

// table makes the entries of methodTable.
func table() []*Method {
	return []*Method{
		def(Method{Name: "publish", GRPC: "Publish", Legacy: 0, Admin: []string{"channel", "data", "tags"},
			Summary: "Publish data into a channel."},
			(*Executor).Publish, grpcPublishRequest, grpcPublishResult),
		def(Method{Name: "broadcast", GRPC: "Broadcast", Legacy: 1, Admin: []string{"channels", "data", "tags"},
			Summary: "Publish the same data into several channels."},
			(*Executor).Broadcast, grpcBroadcastRequest, grpcBroadcastResult),
		def(Method{Name: "subscribe", GRPC: "Subscribe", Legacy: 11,
			Summary: "Subscribe a user's connections to a channel from the server side."},
			(*Executor).Subscribe, grpcSubscribeRequest, emptyResult[apipb.SubscribeResult]),
		def(Method{Name: "unsubscribe", GRPC: "Unsubscribe", Legacy: 2, Admin: []string{"user", "channel"},
			Summary: "Unsubscribe a user's connections from a channel."},
			(*Executor).Unsubscribe, grpcUnsubscribeRequest, emptyResult[apipb.UnsubscribeResult]),
		def(Method{Name: "disconnect", GRPC: "Disconnect", Legacy: 3, Admin: []string{"user"},
			Summary: "Disconnect a user's connections."},
			(*Executor).Disconnect, grpcDisconnectRequest, emptyResult[apipb.DisconnectResult]),
		def(Method{Name: "refresh", GRPC: "Refresh", Legacy: 12,
			Summary: "Extend or end a user's connections."},
			(*Executor).Refresh, grpcRefreshRequest, emptyResult[apipb.RefreshResult]),
		def(Method{Name: "presence", GRPC: "Presence", Legacy: 4,
			Summary: "List the clients subscribed to a channel."},
			(*Executor).Presence, grpcChannelRequest[*apipb.PresenceRequest], grpcPresenceResult),
		def(Method{Name: "presence_stats", GRPC: "PresenceStats", Legacy: 5,
			Summary: "Count the clients and users subscribed to a channel."},
			(*Executor).PresenceStats, grpcChannelRequest[*apipb.PresenceStatsRequest], grpcPresenceStatsResult),
		def(Method{Name: "history", GRPC: "History", Legacy: 6,
			Summary: "Read a channel's history."},
			(*Executor).History, grpcHistoryRequest, grpcHistoryResult),
		def(Method{Name: "history_remove", GRPC: "HistoryRemove", Legacy: 7, Admin: []string{"channel"},
			Summary: "Remove a channel's history."},
			(*Executor).HistoryRemove, grpcChannelRequest[*apipb.HistoryRemoveRequest], emptyResult[apipb.HistoryRemoveResult]),
		def(Method{Name: "channels", GRPC: "Channels", Legacy: 8,
			Summary: "List the active channels of the cluster."},
			(*Executor).Channels, grpcChannelsRequest, grpcChannelsResult),
		def(Method{Name: "info", GRPC: "Info", Legacy: 9,
			Summary: "Describe the nodes of the cluster."},
			(*Executor).Info, grpcInfoRequest, grpcInfoResult),
		def(Method{Name: "rpc", GRPC: "RPC", Legacy: 10,
			Summary: "Call a procedure of the application (the RPC proxy)."},
			(*Executor).RPC, grpcRPCRequest, grpcRPCResult),
		def(Method{Name: "map_publish", GRPC: "MapPublish", Legacy: 33, Admin: []string{"channel", "key", "data", "tags"},
			Summary: "Write a key of a map channel."},
			(*Executor).MapPublish, grpcMapPublishRequest, grpcMapPublishResult),
		def(Method{Name: "map_remove", GRPC: "MapRemove", Legacy: 34, Admin: []string{"channel", "key"},
			Summary: "Remove a key from a map channel."},
			(*Executor).MapRemove, grpcMapRemoveRequest, grpcMapRemoveResult),
		def(Method{Name: "map_read_state", GRPC: "MapReadState", Legacy: 35,
			Summary: "Read a page of a map channel's state."},
			(*Executor).MapReadState, grpcMapReadStateRequest, grpcMapReadStateResult),
		def(Method{Name: "map_read_stream", GRPC: "MapReadStream", Legacy: 36,
			Summary: "Read the changes of a map channel's stream."},
			(*Executor).MapReadStream, grpcMapReadStreamRequest, grpcMapReadStreamResult),
		def(Method{Name: "map_stats", GRPC: "MapStats", Legacy: 37, Admin: []string{"channel"},
			Summary: "Count the keys of a map channel."},
			(*Executor).MapStats, grpcChannelRequest[*apipb.MapStatsRequest], grpcMapStatsResult),
		def(Method{Name: "map_clear", GRPC: "MapClear", Legacy: 38, Admin: []string{"channel"},
			Summary: "Drop a map channel's state and stream; its subscribers load it again."},
			(*Executor).MapClear, grpcChannelRequest[*apipb.MapClearRequest], emptyResult[apipb.MapClearResult]),
		def(Method{Name: "shared_poll_publish", GRPC: "SharedPollPublish", Legacy: 39,
			Summary: "Set a key of a shared_poll channel without waiting for the next poll."},
			(*Executor).SharedPollPublish, grpcSharedPollPublishRequest, emptyResult[apipb.SharedPollPublishResult]),
		def(Method{Name: "batch", GRPC: "Batch", Legacy: -1,
			Summary: "Run several commands in one request."},
			(*Executor).Batch, grpcBatchRequest, grpcBatchResult),
	}
}

// lookup is the method called name, nil when there is none.
func lookup(name string) *Method { return methodsByName[name] }

// Methods are the API's methods, in the order docs/api.md lists them. The
// entries are shared: do not change them.
func Methods() []*Method { return methodTable }

// MethodByName is the method called name, nil when there is none.
func MethodByName(name string) *Method { return lookup(name) }
