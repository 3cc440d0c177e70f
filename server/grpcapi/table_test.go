package grpcapi_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// TestEveryRPCServed: each rpc api.proto declares is a method of the
// API's table and answers a call (an empty request gets a response or an
// API error, never Unimplemented); and each method of the table is an rpc
// of api.proto.
func TestEveryRPCServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	sd := apipb.File_api_proto.Services().ByName("CentrifugoApi")
	byRPC := map[string]*api.Method{}
	for _, m := range api.Methods() {
		byRPC[m.GRPC] = m
		if sd.Methods().ByName(protoreflect.Name(m.GRPC)) == nil {
			t.Errorf("method %s: api.proto has no rpc %s", m.Name, m.GRPC)
		}
	}
	for i := range sd.Methods().Len() {
		md := sd.Methods().Get(i)
		if byRPC[string(md.Name())] == nil {
			t.Errorf("rpc %s is not a method of the table", md.Name())
			continue
		}
		in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
		if err != nil {
			t.Fatal(err)
		}
		out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			t.Fatal(err)
		}
		full := "/" + string(sd.FullName()) + "/" + string(md.Name())
		resp := out.New().Interface()
		if err := e.conn.Invoke(e.ctx(), full, in.New().Interface(), resp); err != nil {
			if status.Code(err) == codes.Unimplemented {
				t.Errorf("%s: %v", full, err)
			}
		}
	}
}
