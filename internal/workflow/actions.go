package workflow

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CopyRepo is actions/checkout done from a local repository: the files git tracks in src, and
// those it would track (untracked, not ignored), as they are in its working tree, copied into the
// workspace or into with["path"] under it. A checkout's ref is the caller's to check.
func CopyRepo(src string) Action {
	return func(ctx context.Context, r *Runner, with map[string]string) error {
		dst := filepath.Join(r.Workspace(), with["path"])
		out, err := exec.CommandContext(ctx, "git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
		if err != nil {
			return fmt.Errorf("checkout: git ls-files in %s: %w", src, err)
		}
		for _, f := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
			if err := copyFile(filepath.Join(src, string(f)), filepath.Join(dst, string(f))); err != nil {
				return fmt.Errorf("checkout: %w", err)
			}
		}
		return nil
	}
}

func copyFile(from, to string) error {
	st, err := os.Lstat(from)
	if os.IsNotExist(err) {
		return nil // deleted in the working tree
	}
	if err != nil || !st.Mode().IsRegular() {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// SetupTool is actions/setup-go or actions/setup-node done by the tool already on PATH: its
// version (what `tool version-args…` prints) must start with the step's with[input], v-prefixed
// or not.
func SetupTool(input string, tool string, versionArgs ...string) Action {
	return func(ctx context.Context, r *Runner, with map[string]string) error {
		out, err := exec.CommandContext(ctx, tool, versionArgs...).Output()
		if err != nil {
			return fmt.Errorf("%s is not on PATH: %w", tool, err)
		}
		want := with[input]
		got := strings.TrimSpace(string(out))
		for _, prefix := range []string{"go version go", "v", ""} {
			if strings.HasPrefix(got, prefix+want) {
				return nil
			}
		}
		return fmt.Errorf("%s: the step asks for %s %q, this machine has %q", tool, input, want, got)
	}
}

// UploadArtifact is actions/upload-artifact checked: with["path"], relative to the workspace,
// must hold every file of want.
func UploadArtifact(want ...string) Action {
	return func(_ context.Context, r *Runner, with map[string]string) error {
		dir := with["path"]
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(r.Workspace(), dir)
		}
		for _, f := range want {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return fmt.Errorf("upload-artifact %s: %w", with["path"], err)
			}
		}
		return nil
	}
}
