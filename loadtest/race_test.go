//go:build race

package loadtest

// raceEnabled is true under the race detector, which makes sync.Pool
// drop items at random: allocation counts mean nothing then.
const raceEnabled = true
