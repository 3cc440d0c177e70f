//go:build !race

package fossil

const raceEnabled = false
