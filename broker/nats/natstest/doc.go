// Package natstest starts real nats-server processes for tests: one per
// call, on a free loopback port, with JetStream on and its store in the
// test's temporary directory, killed when the test ends. Servers can be
// stopped, killed, paused and restarted on the same port with the same
// store, to test what a node does while NATS is away.
//
// nats-server comes from scripts/install-nats (Debian's package). With
// GYRE_SKIP_NATS=1 the tests that need it are skipped where it is missing;
// otherwise a missing binary fails them.
package natstest
