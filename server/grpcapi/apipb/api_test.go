package apipb_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// The tables below are written from Centrifugo v6's
// internal/apiproto/api.proto (centrifugal/centrifugo commit 01df0442;
// SharedPollPublish from v6.9.1).
// A change here means Gyre no longer speaks Centrifugo's gRPC API.

const serviceName = "centrifugal.centrifugo.api.CentrifugoApi"

// field is one field's wire facts: number, name, kind and, for message and
// map fields, the full name of the message or of the map's value.
type field struct {
	num  protowire.Number
	name string
	kind string
	elem string
}

const pkg = "centrifugal.centrifugo.api."

var wantFields = map[string][]field{
	"PublishRequest": {
		{1, "channel", "string", ""},
		{2, "data", "bytes", ""},
		{3, "b64data", "string", ""},
		{4, "skip_history", "bool", ""},
		{5, "tags", "map", "string"},
		{6, "idempotency_key", "string", ""},
		{7, "delta", "bool", ""},
		{8, "version", "uint64", ""},
		{9, "version_epoch", "string", ""},
	},
	"BroadcastRequest": {
		{1, "channels", "repeated string", ""},
		{2, "data", "bytes", ""},
		{3, "b64data", "string", ""},
		{4, "skip_history", "bool", ""},
		{5, "tags", "map", "string"},
		{6, "idempotency_key", "string", ""},
		{7, "delta", "bool", ""},
		{8, "version", "uint64", ""},
		{9, "version_epoch", "string", ""},
	},
	"HistoryRequest": {
		{1, "channel", "string", ""},
		{2, "limit", "int32", ""},
		{3, "since", "message", pkg + "StreamPosition"},
		{4, "reverse", "bool", ""},
	},
	"PublishResponse": {
		{1, "error", "message", pkg + "Error"},
		{2, "result", "message", pkg + "PublishResult"},
	},
	"PublishResult": {
		{1, "offset", "uint64", ""},
		{2, "epoch", "string", ""},
	},
	"Error": {
		{1, "code", "uint32", ""},
		{2, "message", "string", ""},
	},
	"StreamPosition": {
		{1, "offset", "uint64", ""},
		{2, "epoch", "string", ""},
	},
	"BatchRequest": {
		{1, "commands", "repeated message", pkg + "Command"},
		{2, "parallel", "bool", ""},
	},
	"BatchResponse": {
		{1, "replies", "repeated message", pkg + "Reply"},
	},
	"MapPublishRequest": {
		{1, "channel", "string", ""},
		{2, "key", "string", ""},
		{3, "data", "bytes", ""},
		{4, "b64data", "string", ""},
		{5, "stream_data", "bytes", ""},
		{6, "b64stream_data", "string", ""},
		{7, "tags", "map", "string"},
		{8, "idempotency_key", "string", ""},
		{9, "delta", "bool", ""},
		{10, "version", "uint64", ""},
		{11, "version_epoch", "string", ""},
		{12, "score", "int64", ""},
		{13, "key_mode", "string", ""},
	},
	"MapPublishResult": mapUpdateResult,
	"MapRemoveRequest": {
		{1, "channel", "string", ""},
		{2, "key", "string", ""},
		{3, "idempotency_key", "string", ""},
	},
	"MapRemoveResult": mapUpdateResult,
	"MapReadStateRequest": {
		{1, "channel", "string", ""},
		{2, "cursor", "string", ""},
		{3, "limit", "int32", ""},
		{4, "key", "string", ""},
		{5, "asc", "bool", ""},
		{6, "revision_offset", "uint64", ""},
		{7, "revision_epoch", "string", ""},
	},
	"MapReadStateResult": {
		{1, "entries", "repeated message", pkg + "MapEntry"},
		{2, "offset", "uint64", ""},
		{3, "epoch", "string", ""},
		{4, "cursor", "string", ""},
	},
	"MapEntry": {
		{1, "key", "string", ""},
		{2, "data", "bytes", ""},
		{3, "tags", "map", "string"},
		{4, "offset", "uint64", ""},
		{5, "score", "int64", ""},
		{6, "removed", "bool", ""},
		{7, "time", "int64", ""},
	},
	"MapReadStreamRequest": {
		{1, "channel", "string", ""},
		{2, "since_offset", "uint64", ""},
		{3, "since_epoch", "string", ""},
		{4, "limit", "int32", ""},
		{5, "reverse", "bool", ""},
	},
	"MapReadStreamResult": {
		{1, "entries", "repeated message", pkg + "MapEntry"},
		{2, "offset", "uint64", ""},
		{3, "epoch", "string", ""},
	},
	"MapStatsRequest":  {{1, "channel", "string", ""}},
	"MapStatsResult":   {{1, "num_keys", "int32", ""}},
	"MapClearRequest":  {{1, "channel", "string", ""}},
	"MapClearResult":   {},
	"MapClearResponse": {{1, "error", "message", pkg + "Error"}, {2, "result", "message", pkg + "MapClearResult"}},
	"SharedPollPublishRequest": {
		{1, "channel", "string", ""},
		{2, "key", "string", ""},
		{3, "data", "bytes", ""},
		{4, "b64data", "string", ""},
		{5, "version", "uint64", ""},
		{6, "epoch", "string", ""},
	},
	"SharedPollPublishResult": {},
	"SharedPollPublishResponse": {
		{1, "error", "message", pkg + "Error"},
		{2, "result", "message", pkg + "SharedPollPublishResult"},
	},
}

// mapUpdateResult are the fields of MapPublishResult and MapRemoveResult.
var mapUpdateResult = []field{
	{1, "offset", "uint64", ""},
	{2, "epoch", "string", ""},
	{3, "suppressed", "bool", ""},
	{4, "suppress_reason", "string", ""},
}

// commandFields are the method fields Command and Reply share by number.
var commandFields = []struct {
	num     protowire.Number
	name    string
	request string
	result  string
}{
	{4, "publish", "PublishRequest", "PublishResult"},
	{5, "broadcast", "BroadcastRequest", "BroadcastResult"},
	{6, "subscribe", "SubscribeRequest", "SubscribeResult"},
	{7, "unsubscribe", "UnsubscribeRequest", "UnsubscribeResult"},
	{8, "disconnect", "DisconnectRequest", "DisconnectResult"},
	{9, "presence", "PresenceRequest", "PresenceResult"},
	{10, "presence_stats", "PresenceStatsRequest", "PresenceStatsResult"},
	{11, "history", "HistoryRequest", "HistoryResult"},
	{12, "history_remove", "HistoryRemoveRequest", "HistoryRemoveResult"},
	{13, "info", "InfoRequest", "InfoResult"},
	{14, "rpc", "RPCRequest", "RPCResult"},
	{15, "refresh", "RefreshRequest", "RefreshResult"},
	{16, "channels", "ChannelsRequest", "ChannelsResult"},
	{36, "map_publish", "MapPublishRequest", "MapPublishResult"},
	{37, "map_remove", "MapRemoveRequest", "MapRemoveResult"},
	{38, "map_read_state", "MapReadStateRequest", "MapReadStateResult"},
	{39, "map_read_stream", "MapReadStreamRequest", "MapReadStreamResult"},
	{40, "map_stats", "MapStatsRequest", "MapStatsResult"},
	{41, "map_clear", "MapClearRequest", "MapClearResult"},
	{42, "shared_poll_publish", "SharedPollPublishRequest", "SharedPollPublishResult"},
}

func init() {
	cmd := make([]field, 0, len(commandFields))
	reply := []field{{2, "error", "message", pkg + "Error"}}
	for _, c := range commandFields {
		cmd = append(cmd, field{c.num, c.name, "message", pkg + c.request})
		reply = append(reply, field{c.num, c.name, "message", pkg + c.result})
	}
	wantFields["Command"] = cmd
	wantFields["Reply"] = reply
}

func TestService(t *testing.T) {
	services := apipb.File_api_proto.Services()
	if services.Len() != 1 {
		t.Fatalf("%d services, want 1", services.Len())
	}
	sd := services.Get(0)
	if got := string(sd.FullName()); got != serviceName {
		t.Fatalf("service %q, want %q", got, serviceName)
	}
	if apipb.CentrifugoApi_ServiceDesc.ServiceName != serviceName {
		t.Errorf("ServiceDesc.ServiceName %q", apipb.CentrifugoApi_ServiceDesc.ServiceName)
	}
	// Method name, request, response: Centrifugo's, for the methods Gyre has.
	want := [][3]string{
		{"Batch", "BatchRequest", "BatchResponse"},
		{"Broadcast", "BroadcastRequest", "BroadcastResponse"},
		{"Channels", "ChannelsRequest", "ChannelsResponse"},
		{"Disconnect", "DisconnectRequest", "DisconnectResponse"},
		{"History", "HistoryRequest", "HistoryResponse"},
		{"HistoryRemove", "HistoryRemoveRequest", "HistoryRemoveResponse"},
		{"Info", "InfoRequest", "InfoResponse"},
		{"MapClear", "MapClearRequest", "MapClearResponse"},
		{"MapPublish", "MapPublishRequest", "MapPublishResponse"},
		{"MapReadState", "MapReadStateRequest", "MapReadStateResponse"},
		{"MapReadStream", "MapReadStreamRequest", "MapReadStreamResponse"},
		{"MapRemove", "MapRemoveRequest", "MapRemoveResponse"},
		{"MapStats", "MapStatsRequest", "MapStatsResponse"},
		{"Presence", "PresenceRequest", "PresenceResponse"},
		{"PresenceStats", "PresenceStatsRequest", "PresenceStatsResponse"},
		{"Publish", "PublishRequest", "PublishResponse"},
		{"RPC", "RPCRequest", "RPCResponse"},
		{"Refresh", "RefreshRequest", "RefreshResponse"},
		{"SharedPollPublish", "SharedPollPublishRequest", "SharedPollPublishResponse"},
		{"Subscribe", "SubscribeRequest", "SubscribeResponse"},
		{"Unsubscribe", "UnsubscribeRequest", "UnsubscribeResponse"},
	}
	var got [][3]string
	methods := sd.Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		if m.IsStreamingClient() || m.IsStreamingServer() {
			t.Errorf("%s is streaming; Centrifugo's methods are unary", m.Name())
		}
		got = append(got, [3]string{string(m.Name()), string(m.Input().FullName()), string(m.Output().FullName())})
	}
	slices.SortFunc(got, func(a, b [3]string) int { return strings.Compare(a[0], b[0]) })
	for i := range want {
		want[i][1] = pkg + want[i][1]
		want[i][2] = pkg + want[i][2]
	}
	if !slices.Equal(got, want) {
		t.Errorf("methods:\n got %v\nwant %v", got, want)
	}
	if apipb.CentrifugoApi_Publish_FullMethodName != "/"+serviceName+"/Publish" {
		t.Errorf("publish path %q", apipb.CentrifugoApi_Publish_FullMethodName)
	}
}

func TestFields(t *testing.T) {
	msgs := apipb.File_api_proto.Messages()
	for name, want := range wantFields {
		t.Run(name, func(t *testing.T) {
			md := msgs.ByName(protoreflect.Name(name))
			if md == nil {
				t.Fatalf("no message %s", name)
			}
			if got := string(md.FullName()); got != pkg+name {
				t.Errorf("full name %q", got)
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
				got := describe(fd)
				if got != w {
					t.Errorf("field %d: got %+v, want %+v", w.num, got, w)
				}
			}
		})
	}
}

// describe gives fd's wire facts in the form of the tables.
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

// TestPublishEncoding checks the bytes of a publish request field by field,
// as a Centrifugo client would write them, and that the vtproto codec and
// the reflection codec agree.
func TestPublishEncoding(t *testing.T) {
	req := &apipb.PublishRequest{
		Channel:        "chat:index",
		Data:           []byte(`{"text":"hi"}`),
		SkipHistory:    true,
		Tags:           map[string]string{"k": "v"},
		IdempotencyKey: "id1",
		Delta:          true,
	}
	var want []byte
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendString(want, "chat:index")
	want = protowire.AppendTag(want, 2, protowire.BytesType)
	want = protowire.AppendBytes(want, []byte(`{"text":"hi"}`))
	want = protowire.AppendTag(want, 4, protowire.VarintType)
	want = protowire.AppendVarint(want, 1)
	var entry []byte
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "k")
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendString(entry, "v")
	want = protowire.AppendTag(want, 5, protowire.BytesType)
	want = protowire.AppendBytes(want, entry)
	want = protowire.AppendTag(want, 6, protowire.BytesType)
	want = protowire.AppendString(want, "id1")
	want = protowire.AppendTag(want, 7, protowire.VarintType)
	want = protowire.AppendVarint(want, 1)

	vt, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vt, want) {
		t.Errorf("MarshalVT:\n got %x\nwant %x", vt, want)
	}
	refl, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(refl, want) {
		t.Errorf("proto.Marshal:\n got %x\nwant %x", refl, want)
	}
	var back apipb.PublishRequest
	if err := back.UnmarshalVT(want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&back, req) {
		t.Errorf("UnmarshalVT: got %v, want %v", &back, req)
	}
}

// TestBatchUnknownCommand checks that a batch command of a method Gyre does
// not declare (Centrifugo's connections, field 17) decodes as a command with
// no method set rather than failing the whole batch.
func TestBatchUnknownCommand(t *testing.T) {
	var cmd []byte
	cmd = protowire.AppendTag(cmd, 17, protowire.BytesType)
	cmd = protowire.AppendBytes(cmd, nil)
	var batch []byte
	batch = protowire.AppendTag(batch, 1, protowire.BytesType)
	batch = protowire.AppendBytes(batch, cmd)

	var req apipb.BatchRequest
	if err := req.UnmarshalVT(batch); err != nil {
		t.Fatal(err)
	}
	if len(req.Commands) != 1 {
		t.Fatalf("%d commands, want 1", len(req.Commands))
	}
	c := req.Commands[0]
	if c.Publish != nil || c.Channels != nil || len(c.ProtoReflect().GetUnknown()) == 0 {
		t.Errorf("command %v: want no known method and the unknown field kept", c)
	}
}
