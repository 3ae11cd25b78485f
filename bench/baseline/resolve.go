package baseline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNoBaseline is why the check could not run: no release tag to compare with (a checkout
// without tags, a shallow clone, not a git checkout). Without an explicit BENCH_BASELINE the
// check is then NOT RUN, said loudly, and a correct tree is not failed for it.
var ErrNoBaseline = errors.New("no baseline to compare with")

// ReleasePattern is what a release tag looks like (git describe --match).
const ReleasePattern = "v[0-9]*"

// Ref is a resolved baseline: the name as asked (or found) and its commit.
type Ref struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
	// How says how it was chosen: "BENCH_BASELINE" or "the last release tag".
	How string `json:"how"`
}

// Tree is the working tree being judged: its HEAD and whether it has changes on top.
type Tree struct {
	Head  string `json:"head"`
	Dirty bool   `json:"dirty"`
}

func (t Tree) String() string {
	s := short(t.Head)
	if t.Dirty {
		s += " with uncommitted changes"
	}
	return s
}

func git(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// WorkingTree reads root's HEAD and whether tracked files differ from it.
func WorkingTree(ctx context.Context, root string) (Tree, error) {
	head, err := git(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		return Tree{}, fmt.Errorf("%w: %w", ErrNoBaseline, err)
	}
	st, err := git(ctx, root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return Tree{}, err
	}
	return Tree{Head: head, Dirty: st != ""}, nil
}

// Resolve finds the baseline. An explicit ref (BENCH_BASELINE) must resolve to a commit. With
// none, it is the last release tag reachable from HEAD — or the one before it when HEAD is that
// tag and the tree has no changes (a release compared with itself proves nothing). ErrNoBaseline
// when there is none, saying why (no tags, a shallow history, not a checkout).
func Resolve(ctx context.Context, root, explicit string, t Tree) (Ref, error) {
	if explicit != "" {
		c, err := git(ctx, root, "rev-parse", "--verify", "--quiet", explicit+"^{commit}")
		if err != nil || c == "" {
			return Ref{}, fmt.Errorf("BENCH_BASELINE=%s does not name a commit of this checkout: %w", explicit, err)
		}
		return Ref{Name: explicit, Commit: c, How: "BENCH_BASELINE"}, nil
	}
	tag, err := lastRelease(ctx, root, "HEAD")
	why := "no release tag (" + ReleasePattern + ") is reachable from HEAD"
	if err == nil {
		var c string
		if c, err = git(ctx, root, "rev-parse", tag+"^{commit}"); err == nil && c == t.Head && !t.Dirty {
			// HEAD is the release itself: judge it against the release before.
			why = "HEAD is the release " + tag + " itself, unchanged, and no earlier release tag (" + ReleasePattern + ") is reachable"
			tag, err = lastRelease(ctx, root, tag+"^")
		}
	}
	if err != nil {
		if sh, _ := git(ctx, root, "rev-parse", "--is-shallow-repository"); sh == "true" {
			why += " in this shallow clone (fetch the history and tags: git fetch --unshallow --tags)"
		}
		return Ref{}, fmt.Errorf("%w: %s; set BENCH_BASELINE=<ref> to choose one", ErrNoBaseline, why)
	}
	c, err := git(ctx, root, "rev-parse", tag+"^{commit}")
	if err != nil {
		return Ref{}, err
	}
	return Ref{Name: tag, Commit: c, How: "the last release tag"}, nil
}

func lastRelease(ctx context.Context, root, from string) (string, error) {
	return git(ctx, root, "describe", "--tags", "--abbrev=0", "--match", ReleasePattern, from)
}

func short(commit string) string { return commit[:min(len(commit), 10)] }
