// Command gyre runs the Gyre real-time messaging server, and has the tools
// that go with it: config generation and checks, token generation and
// checks.
//
//	gyre [-c config.json] [--http_server.port 9000] ...   run the server
//	gyre genconfig [-c config.json] [-f json|yaml|toml]    write a config with fresh secrets
//	gyre checkconfig -c config.json                        validate a config
//	gyre defaultconfig [-f json|yaml|toml]                 print the defaults
//	gyre gentoken -u USER [-t 3600] [-c config.json]       a connection token (-t: seconds or 1h; default a week)
//	gyre gensubtoken -u USER -s CHANNEL [-t 3600] [-c ...] a subscription token
//	gyre checktoken [-c config.json] TOKEN                 verify a connection token
//	gyre checksubtoken [-c config.json] TOKEN              verify a subscription token
//	gyre filter 'EXPR'                                     print a tags filter expression as a JSON tree
//	gyre health [--url URL] [-c config.json]               exit 0 when the server's health endpoint answers 200
//	gyre version
//	gyre bench SCENARIO --url ws://...                     load test any Centrifugo-compatible server
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gyre:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	err := dispatch(args, stdout, stderr)
	var help *helpRequested
	if errors.As(err, &help) {
		_, err = io.WriteString(stdout, help.text)
	}
	return err
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "genconfig":
			return genConfig(args[1:], stdout)
		case "checkconfig":
			return checkConfig(args[1:], stdout, stderr)
		case "defaultconfig":
			return defaultConfig(args[1:], stdout)
		case "gentoken":
			return genToken(args[1:], stdout, stderr, false)
		case "gensubtoken":
			return genToken(args[1:], stdout, stderr, true)
		case "checktoken":
			return checkToken(args[1:], stdout, false)
		case "checksubtoken":
			return checkToken(args[1:], stdout, true)
		case "filter":
			return filterCmd(args[1:], stdout)
		case "health":
			return healthCmd(args[1:], stdout)
		case "version", "--version", "-version", "-v":
			return printVersion(stdout)
		case "bench":
			return runBench(args[1:], stdout, stderr)
		case "help", "-h", "--help", "-help":
			if len(args) > 1 && args[1] != "serve" {
				// gyre help SUBCOMMAND is SUBCOMMAND -h.
				return dispatch([]string{args[1], "-h"}, stdout, stderr)
			}
			return usage(stdout)
		}
	}
	return serve(args, stdout, stderr)
}

func usage(w io.Writer) error {
	_, err := io.WriteString(w, usageText)
	return err
}

const usageText = `Usage:
  gyre [-c config.json] [--KEY.PATH VALUE ...]   run the server
  gyre genconfig [-c config.json] [-f json|yaml|toml]
  gyre checkconfig -c config.json
  gyre defaultconfig [-f json|yaml|toml]
  gyre gentoken -u USER [-t TTL] [-c config.json]
  gyre gensubtoken -u USER -s CHANNEL [-t TTL] [-c config.json]
                                      TTL: seconds (60) or a Go duration (1h, 90s);
                                      0 never expires; default 604800 (a week)
  gyre checktoken [-c config.json] TOKEN
  gyre checksubtoken [-c config.json] TOKEN
  gyre filter 'EXPR'                  print the tags filter tree of an expression
  gyre health [--url URL] [-c config.json]   exit 0 when the health endpoint answers 200, else 1
  gyre version                        (or gyre --version)
  gyre bench SCENARIO --url ws://HOST:PORT/connection/websocket [...]   load test (idle, fanout, channels, connect)

Without a config file, gyre runs on development defaults: fresh secrets, open
channels, a demo page; environment variables and flags change single keys over
them. A config file (even an empty {} one) turns development mode off.
Every config key can be set as --key.path VALUE or GYRE_KEY_PATH=VALUE
(CENTRIFUGO_KEY_PATH=VALUE is read too; GYRE_ wins).
"gyre SUBCOMMAND -h" describes a subcommand and its flags.
`
