//go:build unix

package runner

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// divertStdout points file descriptor 1 at path (Ginkgo's reporter writes there) and returns a
// writer to the original standard output, and a function that puts it back.
func divertStdout(path string, stdout io.Writer) (io.Writer, func(), error) {
	if stdout != os.Stdout {
		return stdout, func() {}, nil // a caller's writer: nothing to divert
	}
	logf, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	saved, err := unix.Dup(1)
	if err != nil {
		logf.Close()
		return nil, nil, err
	}
	if err := unix.Dup2(int(logf.Fd()), 1); err != nil {
		logf.Close()
		unix.Close(saved)
		return nil, nil, err
	}
	console := os.NewFile(uintptr(saved), "stdout")
	return console, func() {
		_ = unix.Dup2(saved, 1)
		console.Close()
		logf.Close()
	}, nil
}
