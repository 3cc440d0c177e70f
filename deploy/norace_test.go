//go:build !race

package deploy_test

const raceEnabled = false
