//go:build race

package metrics_test

// raceEnabled is true under the race detector, which allocates.
const raceEnabled = true
