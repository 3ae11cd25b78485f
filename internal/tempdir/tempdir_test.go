package tempdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A dir whose maker is gone is swept by the next New of its family; a live maker's dir, a dir
// without an owner file and another family's dir are left alone.
func TestNewSweepsTheDeadMakersDirs(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: nothing is swept here")
	}
	parent := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no true(1) to make a dead PID: %v", err)
	}
	mk := func(name string, pid int) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if pid > 0 {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	gone := mk("fam-gone", dead.Process.Pid)
	live := mk("fam-live", os.Getpid())
	bare := mk("fam-bare", 0)
	other := mk("other-gone", dead.Process.Pid)
	d, err := New(parent, "fam-", "fam-new-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d, ownerFile))
	if err != nil || string(b) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("the new dir's owner file: %q, %v; want this PID", b, err)
	}
	for dir, kept := range map[string]bool{gone: false, live: true, bare: true, other: true, d: true} {
		if _, err := os.Stat(dir); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(dir), err == nil, kept)
		}
	}
}
