// Package server is the standalone Gyre server: it turns a configuration
// (server/config) into a gyre.Node, and serves the client transports, the
// HTTP API, health and metrics over HTTP.
package server
