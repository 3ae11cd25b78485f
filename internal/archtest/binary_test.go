package archtest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoCompiledBinaryTracked: no file git tracks is a compiled program (the kit is built from
// source; /bin, /emq-* and *.test are ignored). A compiled binary holds NUL bytes near its start
// and one of the executable formats' magic numbers; text files hold neither.
func TestNoCompiledBinaryTracked(t *testing.T) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("SKIP: not a git checkout (%v)", err)
	}
	magics := [][]byte{{0x7f, 'E', 'L', 'F'}, {0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf},
		{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}, {0xca, 0xfe, 0xba, 0xbe}, []byte("MZ"), []byte("\x00asm")}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(filepath.Join("../..", name))
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 8192)
		n, _ := io.ReadFull(f, head)
		f.Close()
		head = head[:n]
		for _, m := range magics {
			if bytes.HasPrefix(head, m) && bytes.IndexByte(head, 0) >= 0 {
				t.Errorf("%s is a compiled binary: remove it (git rm --cached %s) and build it instead", name, name)
			}
		}
	}
}
