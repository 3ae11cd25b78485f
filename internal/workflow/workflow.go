// Package workflow runs a GitHub Actions job the way a runner runs a container job, without a
// container or a runner: the job's directories laid out as the runner mounts them (the workspace
// at <root>/__w/<repo>/<repo>, HOME at <root>/github/home, $RUNNER_TEMP at <root>/__w/_temp),
// ${{ github.workspace }} evaluated to the runner host's path, which does not exist inside a
// container (the runner's own work directory under <root>/host, never created), $GITHUB_WORKSPACE to the
// container's, each run step through bash -eo pipefail in the workspace, and each action a step
// uses done by a handler the caller gives. What a container would give and this machine must not
// be changed for — installing the image's packages, adding a user, switching to it — goes
// through shims that record the call (Log): apt-get without a private apt state, useradd, chown,
// runuser (which maps the user's /home/<user> under root).
//
// It evaluates only the expressions certify-port.yml uses (${{ env.X }}, ${{ github.workspace }},
// if: always(), if: env.X == / != 'literal'); any other is ErrExpression, so a workflow that
// grows past what is checked here says so.
package workflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrExpression is an expression the runner here does not evaluate.
var ErrExpression = errors.New("workflow: an expression this runner does not evaluate")

// Workflow is the part of a workflow file a job needs.
type Workflow struct {
	Jobs map[string]Job `yaml:"jobs"`
}

// Job is one job.
type Job struct {
	Container any               `yaml:"container"`
	Env       map[string]string `yaml:"env"`
	Steps     []Step            `yaml:"steps"`
}

// Step is one step: a run step or a uses step.
type Step struct {
	Name string            `yaml:"name"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
}

// Title is the step's name, or what it runs.
func (s Step) Title() string {
	if s.Name != "" {
		return s.Name
	}
	if s.Uses != "" {
		return s.Uses
	}
	line, _, _ := strings.Cut(s.Run, "\n")
	return line
}

// Parse reads a workflow file.
func Parse(b []byte) (*Workflow, error) {
	var w Workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	return &w, nil
}

// Action does what a uses step does: with is the step's evaluated inputs.
type Action func(ctx context.Context, r *Runner, with map[string]string) error

// Runner runs one job under Root.
type Runner struct {
	Root string
	Repo string // the repository's name
	// Env overrides the job's env (a port team's values); Extra is added to every run step's
	// environment (what a runner's caches would restore: GOMODCACHE, GOCACHE, EMQ_CACHE).
	Env   map[string]string
	Extra []string
	// Actions are the uses steps' handlers, by the uses value ("actions/checkout@v4").
	Actions        map[string]Action
	Stdout, Stderr io.Writer

	env   map[string]string // the job's env, evaluated
	steps int               // run steps so far, for their script files' names
}

// Workspace is $GITHUB_WORKSPACE: the container's path of the workspace.
func (r *Runner) Workspace() string { return filepath.Join(r.Root, "__w", r.Repo, r.Repo) }

// HostWorkspace is what ${{ github.workspace }} says in a container job: the runner host's path,
// absent from the container.
func (r *Runner) HostWorkspace() string {
	return filepath.Join(r.Root, "host", "home", "runner", "work", r.Repo, r.Repo)
}

// JobEnv is the job's env, evaluated (after Run began).
func (r *Runner) JobEnv(name string) string { return r.env[name] }

// Log is what the shims recorded, one call a line.
func (r *Runner) Log() string {
	b, _ := os.ReadFile(filepath.Join(r.Root, "shims.log"))
	return string(b)
}

// Run runs the job's steps in order, as a runner does: a step whose if is false is skipped, and
// after a failed step only the steps with if: always() run. It returns the first failure.
func (r *Runner) Run(ctx context.Context, job Job) error {
	for _, d := range []string{r.Workspace(), filepath.Join(r.Root, "__w", "_temp"), filepath.Join(r.Root, "github", "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := r.shims(); err != nil {
		return err
	}
	r.env = map[string]string{}
	for k, v := range job.Env {
		if o, ok := r.Env[k]; ok {
			v = o
		}
		ev, err := r.eval(v)
		if err != nil {
			return fmt.Errorf("env %s: %w", k, err)
		}
		r.env[k] = ev
	}
	var failed error
	for i, s := range job.Steps {
		run, err := r.cond(s.If, failed != nil)
		if err != nil {
			return fmt.Errorf("step %d (%s): if: %w", i+1, s.Title(), err)
		}
		if !run {
			fmt.Fprintf(r.Stderr, "workflow: step %d skipped: %s\n", i+1, s.Title())
			continue
		}
		fmt.Fprintf(r.Stderr, "workflow: step %d: %s\n", i+1, s.Title())
		if err := r.step(ctx, s); err != nil && failed == nil {
			failed = fmt.Errorf("step %d (%s): %w", i+1, s.Title(), err)
		}
	}
	return failed
}

func (r *Runner) step(ctx context.Context, s Step) error {
	if s.Uses != "" {
		act, ok := r.Actions[s.Uses]
		if !ok {
			return fmt.Errorf("no handler for %s", s.Uses)
		}
		with := map[string]string{}
		for k, v := range s.With {
			ev, err := r.eval(v)
			if err != nil {
				return fmt.Errorf("with %s: %w", k, err)
			}
			with[k] = ev
		}
		return act(ctx, r, with)
	}
	script, err := r.eval(s.Run)
	if err != nil {
		return err
	}
	r.steps++
	f := filepath.Join(r.Root, "__w", "_temp", fmt.Sprintf("step-%d.sh", r.steps))
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", f)
	cmd.Dir = r.Workspace()
	cmd.Env = r.stepEnv()
	cmd.Stdout, cmd.Stderr = r.Stdout, r.Stderr
	return cmd.Run()
}

// stepEnv is a run step's environment: the runner's variables, the job's env, the extras, and
// PATH with the shims first.
func (r *Runner) stepEnv() []string {
	env := []string{
		"PATH=" + filepath.Join(r.Root, "shims") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(r.Root, "github", "home"),
		"GITHUB_WORKSPACE=" + r.Workspace(),
		"RUNNER_TEMP=" + filepath.Join(r.Root, "__w", "_temp"),
		"CI=true", "GITHUB_ACTIONS=true",
		"WORKFLOW_ROOT=" + r.Root,
	}
	keys := make([]string, 0, len(r.env))
	for k := range r.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+r.env[k])
	}
	return append(env, r.Extra...)
}

var expr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// eval replaces the expressions in s.
func (r *Runner) eval(s string) (string, error) {
	var bad error
	out := expr.ReplaceAllStringFunc(s, func(m string) string {
		e := expr.FindStringSubmatch(m)[1]
		switch {
		case e == "github.workspace":
			return r.HostWorkspace()
		case strings.HasPrefix(e, "env."):
			return r.env[strings.TrimPrefix(e, "env.")]
		}
		bad = fmt.Errorf("%w: ${{ %s }}", ErrExpression, e)
		return m
	})
	return out, bad
}

var comparison = regexp.MustCompile(`^env\.([A-Za-z_][A-Za-z0-9_]*)\s*(==|!=)\s*'([^']*)'$`)

// cond evaluates a step's if: empty runs it unless an earlier step failed.
func (r *Runner) cond(cond string, afterFailure bool) (bool, error) {
	cond = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(cond), "${{"), "}}"))
	switch {
	case cond == "always()":
		return true, nil
	case cond == "":
		return !afterFailure, nil
	}
	m := comparison.FindStringSubmatch(cond)
	if m == nil {
		return false, fmt.Errorf("%w: %s", ErrExpression, cond)
	}
	return !afterFailure && (r.env[m[1]] == m[3]) == (m[2] == "=="), nil
}
