// Package wstest is a raw Gyre client protocol client over a real
// WebSocket, for tests only: it is a normal package so that tests in
// several packages can share it, and nothing but tests imports it.
//
// A [Client] sends commands exactly as a test builds them and records
// what the server sends back: replies by id, pushes in order, pings
// (answered with pongs unless [NoPong] is given) and the close code and
// reason. Every wait fails the test with a message naming what it waited
// for, after a limit that guards against hangs; it is never a timing
// assertion.
//
// It imports only the protocol package, gobwas/ws and the standard
// library, so that the packages it tests can use it without a cycle.
package wstest
