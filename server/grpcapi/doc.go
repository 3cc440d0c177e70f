// Package grpcapi serves the server API over gRPC: service
// centrifugal.centrifugo.api.CentrifugoApi (apipb), wire-compatible with
// Centrifugo v6's, so a backend generated from Centrifugo's api.proto
// calls Gyre unchanged.
//
// The service is built from the API's method table (api.Methods): each
// method is the rpc its entry names, converted and run by the entry on the
// same api.Executor as the HTTP API ([api.Executor.CallGRPC]).
// A method's error is answered in the response's error field, with the
// code and message the HTTP API gives it; gRPC statuses are kept for
// calls that cannot run at all (UNAUTHENTICATED without the key, the
// transport's own limits), unless the transport error mode is on (config
// or metadata "x-centrifugo-error-mode: transport"), which turns a
// method's error into a status as well.
package grpcapi
