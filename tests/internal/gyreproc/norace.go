//go:build !race

package gyreproc

const raceDetector = false
