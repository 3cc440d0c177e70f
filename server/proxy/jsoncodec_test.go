package proxy

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

func TestMarshalJSONShape(t *testing.T) {
	req := &proxypb.PublishRequest{
		Client: "c1", User: "u", Channel: "chat:x", Data: []byte(`{"text":"<hi>"}`), Meta: []byte(`[1,2]`),
	}
	got, err := marshalJSON(req.ProtoReflect())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"client":"c1","user":"u","channel":"chat:x","data":{"text":"<hi>"},"meta":[1,2]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	req.Data = []byte{0xff}
	if _, err := marshalJSON(req.ProtoReflect()); err == nil || !strings.Contains(err.Error(), "data") {
		t.Errorf("binary data = %v, want an error naming the field", err)
	}
}

func TestUnmarshalJSON(t *testing.T) {
	body := `{"result": {"user": "56", "expire_at": "1764090000", "info": {"a": [1, {"b": null}]},
		"channels": ["x", "y"], "subs": {"s": {"data": "str", "override": {"presence": {"value": false}}}},
		"unknown": {"deep": true}, "meta": null, "b64data": "AQI="},
		"error": null}`
	var resp proxypb.ConnectResponse
	if err := unmarshalJSON([]byte(body), resp.ProtoReflect()); err != nil {
		t.Fatal(err)
	}
	want := &proxypb.ConnectResponse{Result: &proxypb.ConnectResult{
		User: "56", ExpireAt: 1764090000, Info: []byte(`{"a": [1, {"b": null}]}`), Channels: []string{"x", "y"},
		Subs: map[string]*proxypb.SubscribeOptions{"s": {
			Data: []byte(`"str"`), Override: &proxypb.SubscribeOptionOverride{Presence: &proxypb.BoolValue{}},
		}},
		B64Data: "AQI=",
	}}
	if !proto.Equal(&resp, want) {
		t.Errorf("got  %v\nwant %v", &resp, want)
	}
	for _, bad := range []string{`[]`, `{"result": {"user": 12}}`, `{"result": {"expire_at": 1.5}}`, `{"result": `, `null`} {
		var r proxypb.ConnectResponse
		if err := unmarshalJSON([]byte(bad), r.ProtoReflect()); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
