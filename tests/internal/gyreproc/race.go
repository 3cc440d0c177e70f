//go:build race

package gyreproc

// raceDetector is true when the tests run under the race detector; Build
// then builds gyre with it too.
const raceDetector = true
