package contracts

import (
	"context"
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/resp"
)

// The harness's plumbing — its own connections (to a standalone server or to every primary of
// a cluster, routed by slot), the MONITOR capture and the wire law — lives in
// contracts/internal/wire and never touches a clause. This file adds what the harness keeps
// beside it.

// Line is one MONITOR line (wire.Line).
type Line = wire.Line

// admin is the harness's own access to the server under test (wire.Admin), with the short names
// the keyspace readers use.
type admin struct{ *wire.Admin }

func dialAdmin(ctx context.Context, addr string) (*admin, error) {
	a, err := wire.DialAdmin(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &admin{a}, nil
}

func dialClusterAdmin(ctx context.Context, seeds []string) (*admin, error) {
	a, err := wire.DialCluster(ctx, seeds)
	if err != nil {
		return nil, err
	}
	return &admin{a}, nil
}

func (a *admin) do(ctx context.Context, args ...any) (resp.Value, error) { return a.Do(ctx, args...) }
func (a *admin) pipeline(ctx context.Context, cmds ...[]any) ([]resp.Value, error) {
	return a.Pipeline(ctx, cmds...)
}
func (a *admin) scan(ctx context.Context, match string) ([]string, error) { return a.Scan(ctx, match) }
func (a *admin) serverMS(ctx context.Context) (int64, error)              { return a.ServerMS(ctx) }

// law is the wire law over the run's bundle (wire.Law), with its scripts by SHA1: the bundle's
// and the admitted ones.
type law struct {
	*wire.Law
	scripts map[string]lua.Script
}

func newLaw(b *lua.Bundle, admit map[string]string, own func(Line) bool, getkeys func([]string) ([]string, error)) *law {
	w := wire.NewLaw(b, admit, own, getkeys)
	return &law{Law: w, scripts: w.Scripts()}
}

// lawRules are the rules of the wire law as the contracts quote them, by the id a violation
// names (TestLawRulesQuoted checks that every id has its rule).
var lawRules = map[wire.RuleID]rules.Rule{
	wire.RuleFence: rules.Fence, wire.RuleEvalsha: rules.Evalsha, wire.RuleCommands: rules.A4,
	wire.RuleKeysParse: rules.Parse, wire.RuleDeclared: rules.Declared, wire.RuleArgvID: rules.ArgvIDKey,
	wire.RuleClusterOneSlot: rules.ClusterOneSlot, wire.RuleClusterOwner: rules.ClusterOwner,
	wire.RuleClusterNoLeft: rules.ClusterNoLeft,
}

// violationText is a violation for a failure's GOT: what broke, the rule it breaks, the lines.
func violationText(v wire.Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  rule: %s", v.What, lawRules[v.Rule])
	for _, l := range v.Lines {
		fmt.Fprintf(&b, "\n  wire: %s", l)
	}
	return b.String()
}
