//go:build !unix

package procs

import (
	"errors"
	"time"
)

func cpuTime() (time.Duration, error) {
	return 0, errors.New("no getrusage on this platform")
}
