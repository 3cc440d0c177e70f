package proxypb_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// The tables below are written from Centrifugo v6's
// internal/proxyproto/proxy.proto (centrifugal/centrifugo commit 0076707d;
// MapPublish, MapRemove, NotifyCacheEmpty, NotifyChannelState and
// SharedPollRefresh from v6.9.1).
// A change here means a backend written for Centrifugo no longer serves
// Gyre. Left out, as in proxy.proto: PRO-only fields (labels) and
// SubscribeOptions.cache_recover (8), which Gyre does not read. Gyre's own additions, at numbers Centrifugo's file
// leaves free, are marked where they sit.

const pkg = "centrifugal.centrifugo.proxy."

const serviceName = pkg + "CentrifugoProxy"

type field struct {
	num  protowire.Number
	name string
	kind string
	elem string
}

// head are the fields every request but connect's starts with.
var head = []field{
	{1, "client", "string", ""},
	{2, "transport", "string", ""},
	{3, "protocol", "string", ""},
	{4, "encoding", "string", ""},
}

func withHead(rest ...field) []field { return append(slices.Clone(head), rest...) }

func response(result string) []field {
	return []field{
		{1, "result", "message", pkg + result},
		{2, "error", "message", pkg + "Error"},
		{3, "disconnect", "message", pkg + "Disconnect"},
	}
}

var wantFields = map[string][]field{
	"FilterNode": {
		{1, "op", "string", ""},
		{2, "key", "string", ""},
		{3, "cmp", "string", ""},
		{4, "val", "string", ""},
		{5, "vals", "repeated string", ""},
		{6, "nodes", "repeated message", pkg + "FilterNode"},
	},
	"Disconnect": {
		{1, "code", "uint32", ""},
		{2, "reason", "string", ""},
	},
	"Error": {
		{1, "code", "uint32", ""},
		{2, "message", "string", ""},
		{3, "temporary", "bool", ""},
	},
	"ConnectRequest": withHead(
		field{10, "data", "bytes", ""},
		field{11, "b64data", "string", ""},
		field{12, "name", "string", ""},
		field{13, "version", "string", ""},
		field{14, "channels", "repeated string", ""},
	),
	"SubscribeOptions": {
		{1, "expire_at", "int64", ""},
		{2, "info", "bytes", ""},
		{3, "b64info", "string", ""},
		{4, "data", "bytes", ""},
		{5, "b64data", "string", ""},
		{6, "override", "message", pkg + "SubscribeOptionOverride"},
		{7, "server_tags_filter", "message", pkg + "FilterNode"},
	},
	"ConnectResult": {
		{1, "user", "string", ""},
		{2, "expire_at", "int64", ""},
		{3, "info", "bytes", ""},
		{4, "b64info", "string", ""},
		{5, "data", "bytes", ""},
		{6, "b64data", "string", ""},
		{7, "channels", "repeated string", ""},
		{8, "subs", "map", pkg + "SubscribeOptions"},
		{9, "meta", "bytes", ""},
		{10, "caps", "repeated message", pkg + "ChannelsCapability"},
	},
	"ChannelsCapability": {
		{1, "channels", "repeated string", ""},
		{2, "allow", "repeated string", ""},
		{3, "match", "string", ""},
	},
	"ConnectResponse": response("ConnectResult"),
	"RefreshRequest": withHead(
		field{10, "user", "string", ""},
		field{11, "meta", "bytes", ""},
	),
	"RefreshResult": {
		{1, "expired", "bool", ""},
		{2, "expire_at", "int64", ""},
		{3, "info", "bytes", ""},
		{4, "b64info", "string", ""},
		{5, "meta", "bytes", ""},
		{6, "caps", "repeated message", pkg + "ChannelsCapability"},
	},
	"RefreshResponse": response("RefreshResult"),
	"SubscribeRequest": withHead(
		field{10, "user", "string", ""},
		field{11, "channel", "string", ""},
		field{12, "token", "string", ""},
		field{13, "meta", "bytes", ""},
		field{14, "data", "bytes", ""},
		field{15, "b64data", "string", ""},
	),
	"BoolValue": {{1, "value", "bool", ""}},
	"SubscribeOptionOverride": {
		{1, "presence", "message", pkg + "BoolValue"},
		{2, "join_leave", "message", pkg + "BoolValue"},
		{3, "force_recovery", "message", pkg + "BoolValue"},
		{4, "force_positioning", "message", pkg + "BoolValue"},
		{5, "force_push_join_leave", "message", pkg + "BoolValue"},
	},
	"SubscribeResult": {
		{1, "expire_at", "int64", ""},
		{2, "info", "bytes", ""},
		{3, "b64info", "string", ""},
		{4, "data", "bytes", ""},
		{5, "b64data", "string", ""},
		{6, "override", "message", pkg + "SubscribeOptionOverride"},
		{7, "allow", "repeated string", ""},
		{8, "server_tags_filter", "message", pkg + "FilterNode"},
	},
	"SubscribeResponse": response("SubscribeResult"),
	"PublishRequest": withHead(
		field{10, "user", "string", ""},
		field{11, "channel", "string", ""},
		field{12, "data", "bytes", ""},
		field{13, "b64data", "string", ""},
		field{14, "meta", "bytes", ""},
	),
	"PublishResult": {
		{1, "data", "bytes", ""},
		{2, "b64data", "string", ""},
		{3, "skip_history", "bool", ""},
		{4, "tags", "map", "string"},
		{5, "idempotency_key", "string", ""},
		{6, "delta", "bool", ""},
		{7, "version", "uint64", ""},
		{8, "version_epoch", "string", ""},
	},
	"PublishResponse": response("PublishResult"),
	"MapPublishRequest": withHead(
		field{10, "user", "string", ""},
		field{11, "channel", "string", ""},
		field{12, "key", "string", ""},
		field{13, "data", "bytes", ""},
		field{14, "b64data", "string", ""},
		field{15, "meta", "bytes", ""},
	),
	"MapPublishResult": {
		{1, "key", "string", ""},
		{2, "data", "bytes", ""},
		{3, "b64data", "string", ""},
		{4, "tags", "map", "string"},
		{5, "score", "int64", ""},
		{6, "key_mode", "string", ""},
		{7, "stream_data", "bytes", ""},
		{8, "b64stream_data", "string", ""},
		{9, "idempotency_key", "string", ""},
		{10, "delta", "bool", ""},
		{11, "version", "uint64", ""},
		{12, "version_epoch", "string", ""},
	},
	"MapPublishResponse": response("MapPublishResult"),
	"MapRemoveRequest": withHead(
		field{10, "user", "string", ""},
		field{11, "channel", "string", ""},
		field{12, "key", "string", ""},
		field{13, "meta", "bytes", ""},
	),
	"MapRemoveResult": {
		{1, "key", "string", ""},
		{2, "tags", "map", "string"},
		{3, "idempotency_key", "string", ""},
	},
	"MapRemoveResponse": response("MapRemoveResult"),
	"RPCRequest": withHead(
		field{10, "user", "string", ""},
		field{11, "method", "string", ""},
		field{12, "data", "bytes", ""},
		field{13, "b64data", "string", ""},
		field{14, "meta", "bytes", ""},
	),
	"RPCResult": {
		{1, "data", "bytes", ""},
		{2, "b64data", "string", ""},
	},
	"RPCResponse": response("RPCResult"),
	"SubRefreshRequest": withHead(
		field{10, "user", "string", ""},
		field{11, "channel", "string", ""},
		field{12, "meta", "bytes", ""},
	),
	"SubRefreshResult": {
		{1, "expired", "bool", ""},
		{2, "expire_at", "int64", ""},
		{3, "info", "bytes", ""},
		{4, "b64info", "string", ""},
	},
	"SubRefreshResponse": response("SubRefreshResult"),
	"Publication": {
		{4, "data", "bytes", ""},
		{7, "tags", "map", "string"},
	},
	"StreamSubscribeRequest": {
		{1, "subscribe_request", "message", pkg + "SubscribeRequest"},
		{2, "publication", "message", pkg + "Publication"},
	},
	"StreamSubscribeResponse": {
		{1, "subscribe_response", "message", pkg + "SubscribeResponse"},
		{2, "publication", "message", pkg + "Publication"},
	},
	"NotifyCacheEmptyRequest": {{1, "channel", "string", ""}},
	"NotifyCacheEmptyResponse": {
		{1, "result", "message", pkg + "NotifyCacheEmptyResult"},
		{2, "error", "message", pkg + "Error"}, // Gyre's
	},
	"NotifyCacheEmptyResult":    {{1, "populated", "bool", ""}},
	"NotifyChannelStateRequest": {{1, "events", "repeated message", pkg + "ChannelEvent"}},
	"ChannelEvent": {
		{1, "time_ms", "int64", ""},
		{2, "channel", "string", ""},
		{3, "type", "string", ""},
		{4, "id", "string", ""}, // Gyre's
	},
	"NotifyChannelStateResponse": {
		{1, "result", "message", pkg + "NotifyChannelStateResult"},
		{2, "error", "message", pkg + "Error"},
	},
	"NotifyChannelStateResult": {},
	"SharedPollRefreshRequest": {
		{1, "channel", "string", ""},
		{2, "items", "repeated message", pkg + "SharedPollRefreshItem"},
	},
	"SharedPollRefreshItem": {
		{1, "key", "string", ""},
		{2, "version", "uint64", ""},
	},
	"SharedPollRefreshResponse": {
		{1, "result", "message", pkg + "SharedPollRefreshResult"},
		{2, "error", "message", pkg + "Error"},
	},
	"SharedPollRefreshResult": {
		{1, "items", "repeated message", pkg + "SharedPollRefreshResultItem"},
		{2, "epoch", "string", ""},
	},
	"SharedPollRefreshResultItem": {
		{1, "key", "string", ""},
		{2, "data", "bytes", ""},
		{3, "version", "uint64", ""},
		{4, "removed", "bool", ""},
		{5, "prev_data", "bytes", ""},
	},
}

// wantReserved are numbers a message must never reuse: Centrifugo's
// fields Gyre leaves out (labels) and numbers Centrifugo reserves.
var wantReserved = map[string][]protowire.Number{
	"Disconnect":        {3},
	"ConnectResult":     {11},
	"RefreshRequest":    {12},
	"SubscribeRequest":  {16},
	"PublishRequest":    {15},
	"RPCRequest":        {15},
	"MapPublishRequest": {16},
	"MapRemoveRequest":  {14},
	"SubRefreshRequest": {13},
	"Publication":       {1, 2, 3, 5, 6},
}

func TestService(t *testing.T) {
	services := proxypb.File_proxy_proto.Services()
	if services.Len() != 1 {
		t.Fatalf("%d services, want 1", services.Len())
	}
	sd := services.Get(0)
	if got := string(sd.FullName()); got != serviceName {
		t.Fatalf("service %q, want %q", got, serviceName)
	}
	// name, request, response, client streaming, server streaming
	type method struct {
		name, in, out    string
		cstream, sstream bool
	}
	want := []method{
		{"Connect", "ConnectRequest", "ConnectResponse", false, false},
		{"MapPublish", "MapPublishRequest", "MapPublishResponse", false, false},
		{"MapRemove", "MapRemoveRequest", "MapRemoveResponse", false, false},
		{"NotifyCacheEmpty", "NotifyCacheEmptyRequest", "NotifyCacheEmptyResponse", false, false},
		{"NotifyChannelState", "NotifyChannelStateRequest", "NotifyChannelStateResponse", false, false},
		{"Publish", "PublishRequest", "PublishResponse", false, false},
		{"RPC", "RPCRequest", "RPCResponse", false, false},
		{"Refresh", "RefreshRequest", "RefreshResponse", false, false},
		{"SharedPollRefresh", "SharedPollRefreshRequest", "SharedPollRefreshResponse", false, false},
		{"SubRefresh", "SubRefreshRequest", "SubRefreshResponse", false, false},
		{"Subscribe", "SubscribeRequest", "SubscribeResponse", false, false},
		{"SubscribeBidirectional", "StreamSubscribeRequest", "StreamSubscribeResponse", true, true},
		{"SubscribeUnidirectional", "SubscribeRequest", "StreamSubscribeResponse", false, true},
	}
	var got []method
	ms := sd.Methods()
	for i := range ms.Len() {
		m := ms.Get(i)
		got = append(got, method{
			string(m.Name()), strings.TrimPrefix(string(m.Input().FullName()), pkg),
			strings.TrimPrefix(string(m.Output().FullName()), pkg), m.IsStreamingClient(), m.IsStreamingServer(),
		})
	}
	slices.SortFunc(got, func(a, b method) int { return strings.Compare(a.name, b.name) })
	if !slices.Equal(got, want) {
		t.Errorf("methods:\n got %v\nwant %v", got, want)
	}
	if proxypb.CentrifugoProxy_Connect_FullMethodName != "/"+serviceName+"/Connect" {
		t.Errorf("connect path %q", proxypb.CentrifugoProxy_Connect_FullMethodName)
	}
}

func TestFields(t *testing.T) {
	msgs := proxypb.File_proxy_proto.Messages()
	if msgs.Len() != len(wantFields) {
		t.Errorf("%d messages, want %d", msgs.Len(), len(wantFields))
	}
	for name, want := range wantFields {
		t.Run(name, func(t *testing.T) {
			md := msgs.ByName(protoreflect.Name(name))
			if md == nil {
				t.Fatalf("no message %s", name)
			}
			fds := md.Fields()
			if fds.Len() != len(want) {
				t.Errorf("%d fields, want %d", fds.Len(), len(want))
			}
			for _, w := range want {
				fd := fds.ByNumber(w.num)
				if fd == nil {
					t.Errorf("no field %d (%s)", w.num, w.name)
					continue
				}
				if got := describe(fd); got != w {
					t.Errorf("field %d: got %+v, want %+v", w.num, got, w)
				}
			}
			for _, n := range wantReserved[name] {
				if !md.ReservedRanges().Has(n) {
					t.Errorf("number %d not reserved", n)
				}
			}
		})
	}
}

func describe(fd protoreflect.FieldDescriptor) field {
	f := field{num: fd.Number(), name: string(fd.Name()), kind: fd.Kind().String()}
	switch {
	case fd.IsMap():
		f.kind = "map"
		v := fd.MapValue()
		f.elem = v.Kind().String()
		if v.Message() != nil {
			f.elem = string(v.Message().FullName())
		}
		if fd.MapKey().Kind() != protoreflect.StringKind {
			f.kind = "map with key " + fd.MapKey().Kind().String()
		}
		return f
	case fd.Message() != nil:
		f.elem = string(fd.Message().FullName())
	}
	if fd.IsList() {
		f.kind = "repeated " + f.kind
	}
	return f
}
