// Package apipb holds the generated protobuf types and gRPC service of
// Gyre's server API over gRPC, service centrifugal.centrifugo.api.CentrifugoApi,
// wire-compatible with Centrifugo v6's. Regenerate with ./generate.sh after
// changing api.proto.
package apipb
