package proxy

import "google.golang.org/protobuf/proto"

// MarshalJSON and UnmarshalJSON expose the HTTP proxies' JSON codec to
// the tests' gRPC backend, so that it records requests and takes canned
// answers in the same form as the HTTP one.
func MarshalJSON(m proto.Message) ([]byte, error)   { return marshalJSON(m.ProtoReflect()) }
func UnmarshalJSON(b []byte, m proto.Message) error { return unmarshalJSON(b, m.ProtoReflect()) }
