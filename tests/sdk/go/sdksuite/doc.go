// Package sdksuite runs the Go SDK's own test suite (go test
// github.com/centrifugal/centrifuge-go, at the version of this module's
// go.mod) against a gyre process.
//
// That suite dials localhost:8000 and expects the server of the SDK's
// docker-compose.yml; the test starts gyre on 127.0.0.1:8000 with the
// equivalent configuration and fails at once when the port is taken.
package sdksuite
