// Package config holds the standalone Gyre server's configuration: every
// Centrifugo v6 configuration key that Gyre implements, with its default, its
// environment variable and a one-line description, all declared once in the
// struct tags of [Config].
//
// # Sources and precedence
//
// A configuration is built in layers, each overriding the one before it:
//
//  1. defaults ([Default]),
//  2. a JSON, YAML or TOML file ([Load], [LoadBytes]),
//  3. environment variables ([Config.ApplyEnv]): the prefix, then the key path
//     upper-cased with dots turned into underscores, e.g. GYRE_HTTP_SERVER_PORT;
//     [Resolve] reads CENTRIFUGO_ and then GYRE_ ([EnvPrefixes]), so GYRE_ wins,
//  4. command-line values keyed by path ([Config.Set], [Config.SetAll]),
//
// and is then checked by [Config.Validate]. [Resolve] runs all of it in that
// order. A Centrifugo v6 configuration file loads unchanged.
//
// # Unknown and unimplemented keys
//
// Unknown keys never stop the server: they come back as warnings for the
// caller to log, so that a typo is visible and a newer file still loads.
// Centrifugo keys for features Gyre does not have (consumers, WebTransport,
// Graphite export ...) are recognised, ignored, and reported as
// warnings when set so that they would change behaviour; each says what to
// do instead (the unsupported struct tag). [Resolve] reports each such key
// once, from the final configuration, whichever layers set it.
// [Config.Unsupported] lists them, for checkconfig to refuse.
// Invalid values are fatal; every error names the key path, for example
//
//	config: channel.namespaces[2].history_ttl: invalid duration "5x"
//
// # Documentation
//
// docs/config.md is generated from the struct tags; a test fails when it is
// out of date.
//
// This package never imports the engine: the server maps a validated Config to
// the engine's own configuration.
package config

//go:generate go run ./gendoc -o ../../docs/config.md
