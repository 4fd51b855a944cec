//go:build !race

package forwarder

// raceDetector: this test binary runs with -race, 5 to 10 times slower.
const raceDetector = false
