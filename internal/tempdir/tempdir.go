// Package tempdir makes private temp dirs that outlive no one for long: each records the PID of
// the process that made it, and making one first removes those of its family whose maker is
// gone (killed before it could remove its own: a SIGKILL, a test binary's timeout).
package tempdir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ownerFile in a dir records the PID of the process that made it.
const ownerFile = ".owner-pid"

// New sweeps family (Sweep), then makes a dir in parent (the system's temp dir when "") named
// prefix and a random suffix, with this process's PID recorded in it. prefix should start with
// family, so a later New of the family sweeps it once this process is gone.
func New(parent, family, prefix string) (string, error) {
	Sweep(parent, family)
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("tempdir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("tempdir: %w", err)
	}
	return dir, nil
}

// Sweep removes the dirs in parent whose names start with family and whose maker is no longer
// alive. A dir without an owner file (being made, or not New's) is left alone. Best effort.
func Sweep(parent, family string) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, family+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}

// alive reports whether a process with this PID exists (a zombie counts as gone). Where /proc
// is absent every process counts as alive, so nothing is swept.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if _, perr := os.Stat("/proc/self/stat"); perr != nil {
			return true
		}
		return false
	}
	// The state is the field after the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}
