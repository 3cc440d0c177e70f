package hookspb_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gyrehq/gyre/server/hooks/hookspb"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// Backends are generated from hooks.proto: a number or name changed here
// breaks every one of them.
func TestWire(t *testing.T) {
	if got := hookspb.UserStatus_NotifyUserStatus_FullMethodName; got != "/gyre.hooks.v1.UserStatus/NotifyUserStatus" {
		t.Errorf("method %q", got)
	}
	want := map[string][]string{
		"NotifyUserStatusRequest":  {1: "events"},
		"UserEvent":                {1: "time_ms", 2: "user", 3: "type", 4: "id", 5: "info"},
		"NotifyUserStatusResponse": {1: "result", 2: "error"},
		"NotifyUserStatusResult":   {},
		"Error":                    {1: "code", 2: "message", 3: "temporary"},
	}
	msgs := hookspb.File_hooks_proto.Messages()
	if msgs.Len() != len(want) {
		t.Errorf("%d messages, want %d", msgs.Len(), len(want))
	}
	for name, fields := range want {
		md := msgs.ByName(protoreflect.Name(name))
		if md == nil {
			t.Errorf("no message %s", name)
			continue
		}
		n := 0
		for num, field := range fields {
			if field == "" {
				continue
			}
			n++
			fd := md.Fields().ByNumber(protoreflect.FieldNumber(num))
			if fd == nil || string(fd.Name()) != field {
				t.Errorf("%s: field %d is %v, want %s", name, num, fd, field)
			}
		}
		if md.Fields().Len() != n {
			t.Errorf("%s: %d fields, want %d", name, md.Fields().Len(), n)
		}
	}
	// A UserEvent reads as a ChannelEvent where they share a meaning.
	user := hookspb.File_hooks_proto.Messages().ByName("UserEvent").Fields()
	channel := proxypb.File_proxy_proto.Messages().ByName("ChannelEvent").Fields()
	for _, f := range []protoreflect.Name{"time_ms", "type", "id"} {
		if user.ByName(f).Number() != channel.ByName(f).Number() {
			t.Errorf("%s: number %d in UserEvent, %d in ChannelEvent", f, user.ByName(f).Number(), channel.ByName(f).Number())
		}
	}
}
