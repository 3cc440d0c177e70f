//go:build !race

package kafka

const raceEnabled = false
