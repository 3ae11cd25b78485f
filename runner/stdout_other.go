//go:build !unix

package runner

import "io"

// divertStdout leaves standard output alone where file descriptors cannot be swapped: Ginkgo's
// own progress then shares the console with the contract lines.
func divertStdout(path string, stdout io.Writer) (io.Writer, func(), error) {
	return stdout, func() {}, nil
}
