// Package sdk holds the compatibility tests of the Go SDK, the module
// github.com/centrifugal/centrifuge-go, against a real gyre process: every
// scenario runs with the SDK's JSON client and with its protobuf client.
//
// The SDK's own test suite, run against gyre, is in the package sdksuite.
package sdk
