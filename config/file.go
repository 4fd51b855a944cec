package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Limits of the files a variable names. A secret is a password or a URL:
// 64 KiB is far more than any. A PEM bundle may hold a whole system CA
// store (~200 KiB), so it gets more room.
const (
	maxSecretFile = 64 << 10
	maxPEMFile    = 4 << 20
	// fileDeadline bounds the read of one file: a hung network file system
	// must not hold start-up (and SIGTERM) forever.
	fileDeadline = 5 * time.Second
)

// errNotRegular is a path that names a device, FIFO, socket or directory:
// /dev/zero never ends and a FIFO blocks until someone writes to it.
var errNotRegular = errors.New("not a regular file")

// readFile reads a whole regular file of at most max bytes within
// fileDeadline. The file is opened non-blocking, so a FIFO swapped in after
// any check cannot block the open, and its type is checked on the open
// descriptor. Errors do not repeat the path.
func readFile(path string, max int64) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readRegular(path, max)
		done <- result{b, err}
	}()
	timer := time.NewTimer(fileDeadline)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.b, r.err
	case <-timer.C:
		// The read goroutine stays blocked in the kernel; the caller
		// reports a configuration error and the process exits.
		return nil, fmt.Errorf("cannot be read within %s", fileDeadline)
	}
}

func readRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("cannot be read: %w (it is a %s)", errNotRegular, kind(st.Mode()))
	}
	if st.Size() > max {
		return nil, fmt.Errorf("is larger than %d bytes (%d)", max, st.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", unwrapPath(err))
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("is larger than %d bytes", max)
	}
	return b, nil
}

// unwrapPath drops the *PathError's path, which the FieldError shows.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}
