// Package proxy calls the application backend on client events: connect,
// refresh, subscribe, publish, sub_refresh and RPC, over HTTP (JSON) or
// gRPC (the CentrifugoProxy service of proxypb), wire-compatible with
// Centrifugo v6 so that a backend written for Centrifugo serves Gyre
// unchanged.
//
// A Proxy is one configured backend endpoint. Its methods take the
// engine's events and return the engine's replies, so that the server
// only has to pick a Proxy per namespace and register the methods as the
// node's handlers. Failures (the backend down, slow, answering an
// unexpected status or a body that does not decode) are logged with the
// proxy's name and cause and reach the client as error 100, or as the
// error or disconnect configured for the HTTP status.
//
// # Connections
//
// An HTTP proxy keeps one http.Client with keep-alive connections; gRPC
// proxies share one grpc.ClientConn per endpoint and options through a
// Pool. Every call is bounded by the proxy's timeout.
//
// # Tracing
//
// With Config.TracerProvider set, each call is an OpenTelemetry CLIENT
// span "proxy <type>", a child of the span of the call's context if any,
// and the backend is sent its W3C traceparent (HTTP header or gRPC
// metadata), replacing one a client's forwarded headers carried.
package proxy
