// Package unigrpc serves the unidirectional gRPC transport (config section
// uni_grpc): service centrifugal.centrifugo.unistream.CentrifugoUniStream,
// whose one method Consume takes a ConnectRequest and streams Push
// messages, wire-compatible with Centrifugo v6.
//
// Each call is one client of a gyre.Node on a unidirectional protobuf
// transport. The engine encodes every push once, in the client protocol's
// protobuf, and the server sends those bytes as gRPC messages through a
// codec of its own, with no marshaling per push (see codec).
//
// The package lives under server/ so that the engine, package gyre, does
// not import gRPC.
package unigrpc
