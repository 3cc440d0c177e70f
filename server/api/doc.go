// Package api holds the server API's methods and serves them over HTTP:
// POST <prefix>/<method> with a JSON body, answered with {"result":{...}}
// or {"error":{"code":N,"message":"..."}}. It is the Centrifugo v6 server
// API, so its client libraries (cent and others) work unchanged.
//
// Each method exists once, as a typed method of [Executor] (Publish,
// History, RPC, Batch ...: a request struct in, a result struct and an
// error out), and has one entry in the method table ([Methods]): its
// name, summary, gRPC rpc and legacy number, how its request is read
// from JSON and from protobuf and its result written as protobuf. Every
// front end reads the table: [Handler] (POST <prefix>/<method>, batch
// commands and the legacy form), the gRPC API (server/grpcapi, through
// [Executor.CallGRPC]), the admin API and web app (server/admin) and the
// method list of docs/api.md (go generate), so that a request gets the
// same answer however it came. [Executor.APIError] maps any error to the
// code and message a caller answers with.
//
// POST <prefix> alone is the legacy form, {"method":"publish","params":{...}},
// one or more commands to a body, which older API clients send; it runs
// the same method code (see legacy.go).
//
// Errors are answered with HTTP 200 and an error object, unless the
// request carries "X-Centrifugo-Error-Mode: transport" or the handler is
// configured so, in which case they map to HTTP statuses.
//
// With Config.TracerProvider set, each request is an OpenTelemetry
// SERVER span continuing the caller's W3C traceparent (trace.go,
// httptrace.go); the executor names the method and channels on the span
// of whatever ctx it is called with and passes that span's context to
// every publication it makes, so that the fan-out joins the trace.
package api

//go:generate go run ./gendoc -o ../../docs/api.md
