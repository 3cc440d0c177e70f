// Package wirepb holds the messages Gyre nodes send each other through
// NATS. Regenerate with generate.sh.
package wirepb
