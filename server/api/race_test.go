//go:build race

package api_test

// raceEnabled is true under the race detector, which makes the largest
// batches too slow to run twice.
const raceEnabled = true
