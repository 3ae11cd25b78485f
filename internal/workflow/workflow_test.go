package workflow_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/internal/workflow"
)

var full = flag.Bool("workflow.full", false, "certify every clause (by default the copied workflow certifies C03 alone, to keep make test short)")

// caches are what a runner's caches would restore into a fresh job (setup-go's module and build
// caches, the engines' cache), so that the job does not download them again here.
func caches(t *testing.T) []string {
	var out []string
	for _, v := range []string{"GOMODCACHE", "GOCACHE"} {
		b, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v+"="+strings.TrimSpace(string(b)))
	}
	if home, err := os.UserHomeDir(); err == nil {
		if c := filepath.Join(home, ".cache", "echomq-kit"); dirExists(c) {
			out = append(out, "EMQ_CACHE="+c)
		}
	}
	if !*full {
		out = append(out, "EMQ_LABEL=C03")
	}
	return out
}

// certifyJob is the job of .github/workflows/certify-port.yml, which runs in a container.
func certifyJob(t *testing.T) workflow.Job {
	t.Helper()
	src, err := os.ReadFile("../../.github/workflows/certify-port.yml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workflow.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	job, ok := w.Jobs["certify"]
	if !ok || job.Container == nil {
		t.Fatalf("the workflow has no job certify in a container")
	}
	return job
}

func dirExists(p string) bool { st, err := os.Stat(p); return err == nil && st.IsDir() }

// TestCopyableWorkflow runs .github/workflows/certify-port.yml the way a runner runs its
// container job — paths from $GITHUB_WORKSPACE, ${{ github.workspace }} the host's path the
// container does not have — in this repository's form and in the form a port team copies
// (KIT_PATH: echomq-kit, the kit checked out beside the port at the tag its KIT_VERSION names):
// the job succeeds, certifies the Node port, pins the kit this tree is, and leaves the folder
// upload-artifact keeps. The workflow as it was (KIT from ${{ github.workspace }}) fails here,
// as it did in a container.
func TestCopyableWorkflow(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the workflow certifies the Node port")
	}
	job := certifyJob(t)
	kit, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name string
		env  map[string]string
	}{{"kit repository", nil}, {"port repository", map[string]string{"KIT_PATH": "echomq-kit"}}} {
		t.Run(v.name, func(t *testing.T) {
			var out bytes.Buffer
			r := &workflow.Runner{Root: t.TempDir(), Repo: "myport", Env: v.env, Extra: caches(t), Stdout: &out, Stderr: &out}
			var kitRef string
			r.Actions = map[string]workflow.Action{
				"actions/checkout@v4": func(ctx context.Context, r *workflow.Runner, with map[string]string) error {
					if with["path"] != "" {
						kitRef = with["ref"]
					}
					return workflow.CopyRepo(kit)(ctx, r, with)
				},
				"actions/setup-go@v5":        workflow.SetupTool("go-version", "go", "version"),
				"actions/setup-node@v4":      workflow.SetupTool("node-version", "node", "--version"),
				"actions/upload-artifact@v4": workflow.UploadArtifact("report.json", "report.schema.json", "report.html", "junit.xml", "badge.svg"),
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			start := time.Now()
			if err := r.Run(ctx, job); err != nil {
				t.Fatalf("the job failed: %v\n%s", err, out.String())
			}
			t.Logf("the job took %s", time.Since(start).Round(time.Second))
			if got := r.JobEnv("KIT_VERSION"); got != contracts.KitVersion {
				t.Errorf("the workflow pins kit %q, this tree is %s", got, contracts.KitVersion)
			}
			if v.env != nil && kitRef != "v"+contracts.KitVersion {
				t.Errorf("a port's job checks the kit out at %q, want the tag v%s", kitRef, contracts.KitVersion)
			}
			rep, err := report.ReadJSON(filepath.Join(r.Workspace(), "certification", "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Facts.Port != "echomq-node" || rep.Facts.KitVersion != contracts.KitVersion || (*full && !rep.Result.Certified) || rep.Counts.Fail > 0 {
				t.Errorf("the certification: port %s, kit %s, certified %v, %+v", rep.Facts.Port, rep.Facts.KitVersion, rep.Result.Certified, rep.Counts)
			}
			for _, call := range []string{"apt-get install -y -qq --no-install-recommends ca-certificates git", "useradd --create-home certifier", "runuser -u certifier --"} {
				if !strings.Contains(r.Log(), call) {
					t.Errorf("the job never ran %q:\n%s", call, r.Log())
				}
			}
		})
	}

	// The workflow as it was: KIT from ${{ github.workspace }}, the host's path.
	was := workflow.Job{Container: "debian:bookworm", Env: map[string]string{"KIT": "${{ github.workspace }}"},
		Steps: []workflow.Step{{Uses: "actions/checkout@v4"}, {Run: `test -f "$KIT/ci/certify-port.sh"`}}}
	r := &workflow.Runner{Root: t.TempDir(), Repo: "myport", Stdout: os.Stderr, Stderr: os.Stderr,
		Actions: map[string]workflow.Action{"actions/checkout@v4": workflow.CopyRepo(kit)}}
	if err := r.Run(context.Background(), was); err == nil {
		t.Error("a job that takes the kit from ${{ github.workspace }} found it in the container")
	}
	if err := r.Run(context.Background(), workflow.Job{Steps: []workflow.Step{{Run: "echo ${{ runner.temp }}"}}}); !errors.Is(err, workflow.ErrExpression) {
		t.Errorf("an expression the runner here does not evaluate: %v, want ErrExpression", err)
	}
}

// TestReleasePinned: the copyable workflow pins the kit this tree is — KIT_VERSION is
// contracts.KitVersion and a port's checkout of the kit takes the tag v$KIT_VERSION — and
// CHANGELOG.md has the release's section.
func TestReleasePinned(t *testing.T) {
	job := certifyJob(t)
	if job.Env["KIT_VERSION"] != contracts.KitVersion {
		t.Errorf("the workflow pins KIT_VERSION %q, this kit is %s", job.Env["KIT_VERSION"], contracts.KitVersion)
	}
	refs := 0
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["path"] != "" {
			refs++
			if s.With["ref"] != "v${{ env.KIT_VERSION }}" {
				t.Errorf("the kit's checkout takes ref %q, want v${{ env.KIT_VERSION }}", s.With["ref"])
			}
		}
	}
	if refs != 1 {
		t.Errorf("the workflow has %d checkouts of the kit beside the port, want 1", refs)
	}
	log, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "\n## Kit "+contracts.KitVersion+"\n") {
		t.Errorf("CHANGELOG.md has no section \"## Kit %s\"", contracts.KitVersion)
	}
}
