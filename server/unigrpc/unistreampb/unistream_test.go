package unistreampb_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
)

const pkg = "centrifugal.centrifugo.unistream."

// TestService: the service and method Centrifugo's consumers call.
func TestService(t *testing.T) {
	services := unistreampb.File_unistream_proto.Services()
	if services.Len() != 1 {
		t.Fatalf("%d services, want 1", services.Len())
	}
	sd := services.Get(0)
	if sd.FullName() != pkg+"CentrifugoUniStream" || sd.Methods().Len() != 1 {
		t.Fatalf("service %s with %d methods, want %sCentrifugoUniStream with one", sd.FullName(), sd.Methods().Len(), pkg)
	}
	m := sd.Methods().Get(0)
	if m.Name() != "Consume" || m.IsStreamingClient() || !m.IsStreamingServer() ||
		m.Input().FullName() != pkg+"ConnectRequest" || m.Output().FullName() != pkg+"Push" {
		t.Errorf("method %s(%s) returns %s (client stream %v, server stream %v); want Consume(ConnectRequest) returns (stream Push)",
			m.Name(), m.Input().FullName(), m.Output().FullName(), m.IsStreamingClient(), m.IsStreamingServer())
	}
	if unistreampb.CentrifugoUniStream_Consume_FullMethodName != "/"+pkg+"CentrifugoUniStream/Consume" {
		t.Errorf("path %q", unistreampb.CentrifugoUniStream_Consume_FullMethodName)
	}
}

// TestSubsetOfClientProtocol: every field of every message here is the
// client protocol's field of the same number in the message of the same
// name, with the same name and type. The server sends the client
// protocol's Push bytes as they are and reads a ConnectRequest into the
// client protocol's, so any difference would garble them.
func TestSubsetOfClientProtocol(t *testing.T) {
	ours := unistreampb.File_unistream_proto.Messages()
	theirs := protocol.File_client_proto.Messages()
	if ours.Len() == 0 {
		t.Fatal("no messages")
	}
	for i := range ours.Len() {
		md := ours.Get(i)
		t.Run(string(md.Name()), func(t *testing.T) {
			cmd := theirs.ByName(md.Name())
			if cmd == nil {
				t.Fatalf("client protocol has no %s", md.Name())
			}
			fds := md.Fields()
			for j := range fds.Len() {
				fd := fds.Get(j)
				cfd := cmd.Fields().ByNumber(fd.Number())
				if cfd == nil {
					t.Errorf("field %d (%s): not in the client protocol", fd.Number(), fd.Name())
					continue
				}
				if got, want := describe(fd), describe(cfd); got != want {
					t.Errorf("field %d: %s here, %s in the client protocol", fd.Number(), got, want)
				}
			}
		})
	}
}

// describe is a field's name, cardinality and type, message types by
// their short name (the packages differ).
func describe(fd protoreflect.FieldDescriptor) string {
	s := string(fd.Name()) + " " + fd.Cardinality().String() + " "
	switch {
	case fd.IsMap():
		return s + "map<" + describeType(fd.MapKey()) + "," + describeType(fd.MapValue()) + ">"
	default:
		return s + describeType(fd)
	}
}

func describeType(fd protoreflect.FieldDescriptor) string {
	if fd.Kind() == protoreflect.MessageKind {
		return string(fd.Message().Name())
	}
	return fd.Kind().String()
}
