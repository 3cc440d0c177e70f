// Package grpcapi serves the server API over gRPC: service
// centrifugal.centrifugo.api.CentrifugoApi (apipb), wire-compatible with
// Centrifugo v6's, so a backend generated from Centrifugo's api.proto
// calls Gyre unchanged.
//
// Every method runs on the same api.Executor as the HTTP API: this package
// only converts between the protobuf messages and the executor's types.
// A method's error is answered in the response's error field, with the
// code and message the HTTP API gives it; gRPC statuses are kept for
// calls that cannot run at all (UNAUTHENTICATED without the key, the
// transport's own limits), unless the transport error mode is on (config
// or metadata "x-centrifugo-error-mode: transport"), which turns a
// method's error into a status as well.
package grpcapi
