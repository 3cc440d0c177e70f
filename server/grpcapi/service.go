package grpcapi

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// serviceName is the gRPC service of the API, Centrifugo's.
const serviceName = "centrifugal.centrifugo.api.CentrifugoApi"

// service serves CentrifugoApi on an api.Executor: each rpc is a method
// of the API's table (api.Methods) with its GRPC name, whose request it
// converts and runs through the executor.
type service struct {
	exec *api.Executor
	cfg  Config
}

// serviceDesc describes the service to gRPC: one rpc per method of the
// table, with the messages api.proto declares for it.
func (s *service) serviceDesc() (*grpc.ServiceDesc, error) {
	sd := apipb.File_api_proto.Services().ByName(protoreflect.Name("CentrifugoApi"))
	desc := &grpc.ServiceDesc{
		ServiceName: serviceName,
		HandlerType: (*any)(nil),
		Metadata:    apipb.File_api_proto.Path(),
	}
	for _, m := range api.Methods() {
		md := sd.Methods().ByName(protoreflect.Name(m.GRPC))
		if md == nil {
			return nil, fmt.Errorf("grpcapi: method %s: api.proto has no rpc %q", m.Name, m.GRPC)
		}
		in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
		if err != nil {
			return nil, fmt.Errorf("grpcapi: method %s: %w", m.Name, err)
		}
		out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			return nil, fmt.Errorf("grpcapi: method %s: %w", m.Name, err)
		}
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: m.GRPC,
			Handler:    s.handler(m, in, out),
		})
	}
	return desc, nil
}

// handler is the gRPC handler of method m, whose request and response
// messages are of types in and out.
func (s *service) handler(m *api.Method, in, out protoreflect.MessageType) grpc.MethodHandler {
	full := "/" + serviceName + "/" + m.GRPC
	call := func(ctx context.Context, req any) (any, error) {
		if m.Name == "batch" {
			return s.batch(ctx, m, req.(proto.Message))
		}
		return s.call(ctx, m, req.(proto.Message), out)
	}
	return func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		req := in.New().Interface()
		if err := dec(req); err != nil {
			return nil, err
		}
		if ic == nil {
			return call(ctx, req)
		}
		return ic(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, call)
	}
}

// call runs method m and answers with a response of type out: its result
// field set, or its error field (or, in the transport error mode, a
// status).
func (s *service) call(ctx context.Context, m *api.Method, req proto.Message, out protoreflect.MessageType) (any, error) {
	start := time.Now()
	res, err := s.exec.CallGRPC(ctx, m, req)
	pe, terr := s.finish(ctx, m.Name, start, err)
	if terr != nil {
		return nil, terr
	}
	resp := out.New()
	fields := resp.Descriptor().Fields()
	if pe != nil {
		resp.Set(fields.ByName("error"), protoreflect.ValueOfMessage(pe.ProtoReflect()))
	} else {
		resp.Set(fields.ByName("result"), protoreflect.ValueOfMessage(res.ProtoReflect()))
	}
	return resp.Interface(), nil
}

// batch runs a batch: a sequential batch publishes each stretch of
// publish and broadcast commands in one PublishMany. Its errors are per
// command, in the replies (a batch over the size limit gets gRPC's
// InvalidArgument, having no place for one).
func (s *service) batch(ctx context.Context, m *api.Method, req proto.Message) (any, error) {
	start := time.Now()
	res, err := s.exec.CallGRPC(ctx, m, req)
	if pe, _ := s.finish(ctx, m.Name, start, err); pe != nil {
		return nil, status.Error(statusCode(pe.Code), pe.Message)
	}
	return res, nil
}

// finish ends the call of method begun at start: it tells OnCall and maps
// err. It returns the error for the response's error field (nil on
// success) and, in the transport error mode, the status to answer with
// instead of a response.
func (s *service) finish(ctx context.Context, method string, start time.Time, err error) (*apipb.Error, error) {
	var code uint32
	var pe *apipb.Error
	if err != nil {
		ae := s.exec.APIError(method, err)
		api.TraceError(trace.SpanFromContext(ctx), ae)
		code = ae.Code
		pe = &apipb.Error{Code: ae.Code, Message: ae.Message}
	}
	if s.cfg.OnCall != nil {
		s.cfg.OnCall(method, code, time.Since(start))
	}
	if pe != nil && s.transportMode(ctx) {
		st, derr := status.New(statusCode(pe.Code), pe.Message).WithDetails(pe)
		if derr != nil {
			return pe, status.Error(statusCode(pe.Code), pe.Message)
		}
		return pe, st.Err()
	}
	return pe, nil
}

// statusCode maps an API error code to the gRPC code of the transport
// error mode, as the HTTP API maps it to an HTTP status.
func statusCode(code uint32) codes.Code {
	switch code {
	case 102, 104:
		return codes.NotFound
	case 107, 108:
		return codes.InvalidArgument
	case 112:
		return codes.OutOfRange
	default:
		return codes.Internal
	}
}
