// Package pgtest runs real PostgreSQL servers for the tests of the
// postgresql consumer (server/consume/pgoutbox) and of whatever consumes
// through it (the consumers' shared suite, the cluster tests, the
// benchmarks).
//
// DSN gives the server a test binary shares: the one of
// GYRE_TEST_POSTGRES_DSN when set (scripts/test starts one per run with
// scripts/start-postgres), else one started for the test binary, which
// Main stops. Each test keeps to an outbox table of its own (NewTable).
// Start gives a test a server of its own, which it may kill and restart on
// the same port and data (Server.Outage). Source is the outbox as the
// consumers' shared suite (server/consume/consumetest) drives it.
//
// The servers are Debian's postgresql package (scripts/install-postgres);
// run as root, they run as the postgres user, since PostgreSQL refuses to
// run as root. Where the package is missing, Require fails the test with a
// hint, or skips it with GYRE_SKIP_POSTGRES=1.
package pgtest
