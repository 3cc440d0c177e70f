// Package proxypb holds the generated protobuf types and gRPC service of
// the calls Gyre makes to application backends, service
// centrifugal.centrifugo.proxy.CentrifugoProxy, wire-compatible with
// Centrifugo v6's proxy.proto. Regenerate with ./generate.sh after
// changing proxy.proto.
package proxypb
