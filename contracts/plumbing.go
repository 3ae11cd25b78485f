package contracts

import (
	"context"
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/resp"
)

// The harness's plumbing — its own connections (to a standalone server or to every primary of
// a cluster, routed by slot), the MONITOR capture and the wire law — lives in
// contracts/internal/wire and never touches a clause. This file gives the clauses their short
// names for it.

// Line is one MONITOR line (wire.Line).
type Line = wire.Line

// admin is the harness's own access to the server under test (wire.Admin).
type admin struct {
	*wire.Admin
	nodes []*adminNode
}

// adminNode is one server the harness talks to: a standalone Valkey, or one primary.
type adminNode struct {
	addr  string // host:port
	label string // what MONITOR lines of this node carry as Line.Node
	c     conn
}

// conn is the harness's connection to one node.
type conn struct{ *wire.Conn }

func (c conn) do(ctx context.Context, args ...any) (resp.Value, error) { return c.Do(ctx, args...) }

func newAdmin(a *wire.Admin) *admin {
	out := &admin{Admin: a}
	for _, n := range a.Nodes {
		out.nodes = append(out.nodes, &adminNode{addr: n.Addr, label: n.Label, c: conn{n.C}})
	}
	return out
}

func dialAdmin(ctx context.Context, addr string) (*admin, error) {
	a, err := wire.DialAdmin(ctx, addr)
	if err != nil {
		return nil, err
	}
	return newAdmin(a), nil
}

func dialClusterAdmin(ctx context.Context, seeds []string) (*admin, error) {
	a, err := wire.DialCluster(ctx, seeds)
	if err != nil {
		return nil, err
	}
	return newAdmin(a), nil
}

func (a *admin) do(ctx context.Context, args ...any) (resp.Value, error) { return a.Do(ctx, args...) }
func (a *admin) pipeline(ctx context.Context, cmds ...[]any) ([]resp.Value, error) {
	return a.Pipeline(ctx, cmds...)
}
func (a *admin) spread(ctx context.Context, cmds ...[]any) ([]resp.Value, error) {
	return a.Spread(ctx, cmds...)
}
func (a *admin) scan(ctx context.Context, match string) ([]string, error) { return a.Scan(ctx, match) }
func (a *admin) serverMS(ctx context.Context) (int64, error)              { return a.ServerMS(ctx) }
func (a *admin) ownerOf(slot uint16) string                               { return a.OwnerOf(slot) }
func (a *admin) primaryOf(slot uint16) int                                { return a.PrimaryOf(slot) }
func (a *admin) locals() []string                                         { return a.Locals() }

// monitor is the MONITOR capture of the servers under test (wire.Monitor).
type monitor struct{ *wire.Monitor }

func startMonitor(ctx context.Context, addr string) (*monitor, error) {
	return startMonitors(ctx, []string{addr}, []string{""})
}

func startMonitors(ctx context.Context, addrs, labels []string) (*monitor, error) {
	m, err := wire.StartMonitors(ctx, addrs, labels)
	if err != nil {
		return nil, err
	}
	return &monitor{m}, nil
}

func (m *monitor) sync(ctx context.Context, a *admin, n int) error { return m.Sync(ctx, a.Admin, n) }
func (m *monitor) snapshot() []Line                                { return m.Snapshot() }
func (m *monitor) locals() []string                                { return m.Locals() }
func (m *monitor) len() int                                        { return m.Len() }

// law is the wire law over the run's bundle (wire.Law).
type law struct {
	*wire.Law
	scripts map[string]lua.Script // by SHA1: the bundle's and the admitted ones
}

func newLaw(b *lua.Bundle, admit map[string]string, own func(Line) bool, getkeys func([]string) ([]string, error)) *law {
	w := wire.NewLaw(b, admit, own, getkeys)
	return &law{Law: w, scripts: w.Scripts()}
}

func (w *law) keysOf(args []string) ([]string, error) { return w.KeysOf(args) }

func evalKeys(args []string) (ks, argv []string, err error) { return wire.EvalKeys(args) }

// lawRules are the rules of the wire law as the contracts quote them, by the id a violation
// names (TestLawRulesQuoted checks that every id has its rule).
var lawRules = map[wire.RuleID]Rule{
	wire.RuleFence: ruleFence, wire.RuleEvalsha: ruleEvalsha, wire.RuleCommands: ruleA4,
	wire.RuleKeysParse: ruleParse, wire.RuleDeclared: ruleDeclared, wire.RuleArgvID: ruleArgvIDKey,
	wire.RuleClusterOneSlot: ruleClusterOneSlot, wire.RuleClusterOwner: ruleClusterOwner,
	wire.RuleClusterNoLeft: ruleClusterNoLeft,
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
