// Package api serves the server HTTP API: POST <prefix>/<method> with a JSON
// body, answered with {"result":{...}} or {"error":{"code":N,"message":"..."}}.
// It is the Centrifugo v6 server API, so its client libraries (cent and
// others) work unchanged.
//
// POST <prefix> alone is the legacy form, {"method":"publish","params":{...}},
// one or more commands to a body, which older API clients send; it runs
// the same method code (see legacy.go).
//
// Errors are answered with HTTP 200 and an error object, unless the
// request carries "X-Centrifugo-Error-Mode: transport" or the handler is
// configured so, in which case they map to HTTP statuses.
package api
