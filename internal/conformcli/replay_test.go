package conformcli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReplayCommand: the replay line names the program as it can be run again from where it was
// printed.
func TestReplayCommand(t *testing.T) {
	kit := t.TempDir()
	if err := os.MkdirAll(filepath.Join(kit, "cmd", "emq-conform"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kit, "cmd", "emq-conform", "main.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(kit)
	for _, c := range []struct{ argv0, want string }{
		{"emq-conform", "emq-conform"},         // found on PATH
		{"bin/emq-conform", "bin/emq-conform"}, // started by a path: the same path
		{"/opt/kit/bin/emq-conform", "/opt/kit/bin/emq-conform"},
		{"/tmp/go-build123/b001/exe/emq-conform", "go run ./cmd/emq-conform"}, // go run, in the checkout
		{"/my kit/bin/emq-conform", `'/my kit/bin/emq-conform'`},
	} {
		if got := replayCommand("emq-conform", c.argv0); got != c.want {
			t.Errorf("replayCommand(%q) = %q, want %q", c.argv0, got, c.want)
		}
	}
	t.Chdir(t.TempDir()) // outside the checkout, go run's binary is gone: the name is the best guess
	if got := replayCommand("emq-conform", "/tmp/go-build123/b001/exe/emq-conform"); got != "emq-conform" {
		t.Errorf("outside the checkout: %q", got)
	}
}
