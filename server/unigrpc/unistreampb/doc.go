// Package unistreampb holds the generated protobuf types and gRPC service
// of the unidirectional gRPC transport, service
// centrifugal.centrifugo.unistream.CentrifugoUniStream, wire-compatible
// with Centrifugo v6's uni_grpc. Regenerate with ./generate.sh after
// changing unistream.proto.
package unistreampb
