//go:build race

package deploy_test

// raceEnabled is true under the race detector: gyre is then built with it
// too, from the packages the race build of the tests has compiled already.
const raceEnabled = true
