// Package redistest starts real Redis processes for tests: a single
// server, a Redis Cluster of several masters, and a master with a replica
// watched by a Sentinel. Every process listens on a free loopback port,
// keeps its files in the test's temporary directory and is killed when the
// test ends (StartShared and StartSharedCluster start processes that a
// whole test binary shares and that the caller kills).
//
// The redis-server, redis-cli and redis-sentinel binaries come from the
// Debian package redis-server (scripts/install-redis installs it). When
// they are missing, Require fails the test with a hint, or skips it when
// the environment variable GYRE_SKIP_REDIS is 1.
package redistest
