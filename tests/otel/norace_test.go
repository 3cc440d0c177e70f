//go:build !race

package otel_test

const raceEnabled = false
