package baseline

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// AgentDir is where the agent's sources are, relative to the kit's root.
const AgentDir = "bench/baseline/agent"

// Agent is one build of the agent: the bus of one tree, the adapter that drove it.
type Agent struct {
	Label   string `json:"label"`
	Bin     string `json:"-"`
	Adapter string `json:"adapter"`
}

// Source is a tree to build the agent against: a module root, with files to add to the agent's
// package (the slowdown test adds a wrapper of the bus this way; nothing else does).
type Source struct {
	Label string
	Dir   string
	Extra map[string][]byte
}

// Extract writes the tree of commit into dir (git archive), so the baseline builds from its own
// sources whatever the working tree holds.
func Extract(ctx context.Context, root, commit, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git archive %s: %w", short(commit), err)
	}
	xerr := untar(out, dir)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", short(commit), err, strings.TrimSpace(errb.String()))
	}
	return xerr
}

func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("git archive: %w", err)
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			continue // pax headers and anything outside dir
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			err = writeFile(name, tr, os.FileMode(h.Mode)&0o777)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(name string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// legacyTag reads an older API's adapter file's own build tag: `//go:build emqlegacy && <tag>`.
var legacyTag = regexp.MustCompile(`(?m)^//go:build emqlegacy && (\w+)\s*$`)

// adapters lists the agent's adapters in the order they are tried: the current API's (no tag)
// first, then every older one's by file name.
func adapters(agentSrc string) ([][]string, error) {
	files, err := filepath.Glob(filepath.Join(agentSrc, "adapter*.go"))
	if err != nil {
		return nil, err
	}
	out := [][]string{nil}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if m := legacyTag.FindSubmatch(b); m != nil {
			out = append(out, []string{"emqlegacy", string(m[1])})
		}
	}
	return out, nil
}

// Place puts the agent's sources (from agentSrc, the working tree's) into the tree at dir,
// replacing whatever agent that tree had: both builds run the same measuring code.
func Place(agentSrc, dir string) error {
	dst := filepath.Join(dir, filepath.FromSlash(AgentDir))
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(agentSrc, "*.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dst, filepath.Base(f)), bytes.NewReader(b), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Build compiles the agent in src into bin with the first adapter that compiles there: the tree
// decides which generation of the bus's API it has. Every adapter's failure is returned when none
// fits (an API change that came without its adapter).
func Build(ctx context.Context, agentSrc string, src Source, bin string) (Agent, error) {
	tried, err := adapters(agentSrc)
	if err != nil {
		return Agent{}, err
	}
	var overlay string
	if len(src.Extra) > 0 {
		if overlay, err = writeOverlay(src, filepath.Dir(bin)); err != nil {
			return Agent{}, err
		}
	}
	var fails []string
	for _, tags := range tried {
		// -trimpath: the compiled packages do not depend on where the tree was extracted, so a
		// second build of the same baseline hits the build cache.
		args := []string{"build", "-trimpath", "-o", bin}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		if overlay != "" {
			args = append(args, "-overlay", overlay)
		}
		cmd := exec.CommandContext(ctx, "go", append(args, "./"+AgentDir)...)
		cmd.Dir = src.Dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err == nil {
			name := "current"
			if len(tags) > 0 {
				name = tags[1]
			}
			return Agent{Label: src.Label, Bin: bin, Adapter: name}, nil
		}
		fails = append(fails, fmt.Sprintf("adapter %q: %v: %s", strings.Join(tags, ","), err, firstLines(string(out), 6)))
	}
	return Agent{}, fmt.Errorf("build the agent against %s: no adapter compiles (an API change needs an adapter file in %s): %s",
		src.Label, AgentDir, strings.Join(fails, "; "))
}

// writeOverlay maps src's extra files into its agent package (go build -overlay).
func writeOverlay(src Source, scratch string) (string, error) {
	repl := map[string]string{}
	for i, n := range slices.Sorted(maps.Keys(src.Extra)) {
		f := filepath.Join(scratch, fmt.Sprintf("extra-%d-%s", i, filepath.Base(n)))
		if err := os.WriteFile(f, src.Extra[n], 0o644); err != nil {
			return "", err
		}
		repl[filepath.Join(src.Dir, filepath.FromSlash(AgentDir), filepath.Base(n))] = f
	}
	b, err := json.Marshal(map[string]any{"Replace": repl})
	if err != nil {
		return "", err
	}
	path := filepath.Join(scratch, "overlay.json")
	return path, os.WriteFile(path, b, 0o644)
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(n, len(lines))], " | ")
}
