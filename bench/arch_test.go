package bench

import (
	"os/exec"
	"strings"
	"testing"
)

// The bench's packages point one way: the systems know only queue and measure (never the bench
// core, the report or each other), queue and measure know no bench package above them, and the
// core never imports the report; the baseline check imports no other bench package. A new system therefore touches its own package and the
// registry, nothing else.
func TestBenchArrowsPointDown(t *testing.T) {
	const mod = "github.com/echomq/kit/bench"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := func(pkg, dep string) bool {
		switch {
		case !strings.HasPrefix(dep, mod):
			return true
		case strings.HasPrefix(pkg, mod+"/systems/"):
			return dep == mod+"/queue" || dep == mod+"/measure" || dep == mod+"/internal/vkadmin"
		case pkg == mod+"/queue", pkg == mod+"/measure", pkg == mod+"/internal/vkadmin":
			return false
		case strings.HasPrefix(pkg, mod+"/baseline"):
			// The baseline check and its agent stand alone: the agent is built against other
			// trees, whose bench packages may differ.
			return false
		case pkg == mod+"/scale":
			return dep == mod+"/queue" || dep == mod+"/measure" || dep == mod+"/internal/vkadmin"
		case pkg == mod:
			return dep != mod+"/report"
		}
		return true
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, dep := range f[1:] {
			if !allowed(f[0], dep) {
				t.Errorf("%s imports %s: the bench's arrows point down (systems → queue, measure; core ↛ report)", f[0], dep)
			}
		}
	}
}
