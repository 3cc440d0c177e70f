//go:build race

package main

// raceEnabled is true under the race detector; the server binary is then
// built with it too.
const raceEnabled = true
