// Package gotest certifies a port from its own `go test`: Certify runs the contracts through
// runner.Run and fails the test unless every selected clause ran and passed — a clause NOT RUN
// (a server not given), NOT CLAIMED or failed fails it, with the reason, as emq-conform's exit
// status would; a clause not offered, or failing as a known list expects, does not.
package gotest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/runner"
)

// Certify runs the contracts on o (runner.Options) and fails t with every clause that did not
// pass. A process runs the contracts once (Ginkgo's rule): call it from one test.
func Certify(t testing.TB, o runner.Options) *runner.Outcome {
	t.Helper()
	out, err := runner.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	sel, _ := contracts.Select(len(o.Cluster) > 0, o.Labels, o.Focus)
	picked := map[string]bool{}
	for _, id := range sel {
		picked[id] = true
	}
	var bad []string
	for _, c := range out.Result.Contracts {
		for _, cl := range c.Clauses {
			if picked[cl.ID] && !settled(cl.Status) {
				bad = append(bad, fmt.Sprintf("%s %s: %s", cl.ID, cl.Status, firstLine(cl.Message())))
			}
		}
	}
	if len(bad) > 0 || out.Exit != runner.ExitCertified {
		t.Errorf("%s (reports in %s):\n  %s", report.Summary(out.Result), out.Dir, strings.Join(bad, "\n  "))
	}
	return out
}

// ServersFromEnv gives, by address, each server clauses need that the environment names
// (EMQ_WRONG_KIND_ADDR, EMQ_VALKEY80_ADDR, EMQ_CLUSTER_NODE_ADDR, EMQ_STANDALONE_VALKEY_ADDR: what
// `emq-engines -certify` prints); one not named leaves its clauses NOT RUN, which fails Certify.
func ServersFromEnv() map[string]contracts.Starter {
	out := map[string]contracts.Starter{}
	for _, s := range contracts.Servers() {
		if addr := os.Getenv(s.Env()); addr != "" {
			out[s.Name] = contracts.Given(addr)
		}
	}
	return out
}

// settled tells a clause verdict that does not fail the test: a pass, a clause the port does not
// offer (neither pass nor failure), one a known list expects to fail.
func settled(st verdict.Status) bool {
	switch st {
	case verdict.StatusPass, verdict.StatusNotOffered, verdict.StatusKnownFailing, verdict.StatusKnownFlaky:
		return true
	}
	return false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
