//go:build race

package kafka

// raceEnabled: the race detector makes allocations of its own.
const raceEnabled = true
