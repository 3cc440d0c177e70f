//go:build race

package otel_test

// raceEnabled is true under the race detector; the gyre binary is then
// built with it too.
const raceEnabled = true
