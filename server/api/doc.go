// Package api holds the server API's methods and serves them over HTTP:
// POST <prefix>/<method> with a JSON body, answered with {"result":{...}}
// or {"error":{"code":N,"message":"..."}}. It is the Centrifugo v6 server
// API, so its client libraries (cent and others) work unchanged.
//
// Each method exists once, as a typed method of [Executor] (Publish,
// History, RPC, Batch ...: a request struct in, a result struct and an
// error out). [Handler] decodes JSON and calls it; the gRPC API
// (server/grpcapi) converts protobuf and calls the same Executor, so both
// give a request the same answer. [Executor.APIError] maps any error to
// the code and message a caller answers with.
//
// POST <prefix> alone is the legacy form, {"method":"publish","params":{...}},
// one or more commands to a body, which older API clients send; it runs
// the same method code (see legacy.go).
//
// Errors are answered with HTTP 200 and an error object, unless the
// request carries "X-Centrifugo-Error-Mode: transport" or the handler is
// configured so, in which case they map to HTTP statuses.
package api
