package mutant

import (
	"context"
	"errors"
	"strings"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/slotmap"
)

// The cluster mutants are fronts over the port's sessions that change nothing on a standalone
// server: they are run against a cluster (Spec.Cluster, emq-conform -cluster).

// clusterMutants break the cluster rules a cluster run adds (rules.Cluster, contracts/rules).
var clusterMutants = []Spec{
	{Name: "cluster-wrong-node", Contract: "C03", Rule: "cluster-no-redirect-left", Cluster: true,
		Defect: "in cluster mode every enqueue is first sent to a primary that does not own the queue's slot (a router trusting a stale map and MOVED), then to the owner",
		Go:     front(func(d drivers.Driver) drivers.Driver { return &wrongNodeFront{Driver: d} })},
	{Name: "cluster-standalone-fallback", Contract: "C01", Rule: "cluster-server", Cluster: true,
		Defect: "asked for cluster mode against a standalone server, the port falls back to a standalone session instead of refusing EMQSERVER",
		Go:     front(func(d drivers.Driver) drivers.Driver { return standaloneFallback{d} })},
	{Name: "asking-dropped", Contract: "C06", Rule: "cluster-owner", Cluster: true,
		Defect: "in cluster mode a call an ASK redirected goes to the importing primary without ASKING before it (a PING in its place), as a router that takes ASK for MOVED sends it; the primary answers MOVED back to the slot's owner",
		Go: func(opt *bus.Options) Wrap {
			opt.Test.Hook = chain(opt.Test.Hook, func(args []any) []any {
				if len(args) == 1 && strings.EqualFold(text(args[0]), "ASKING") {
					return []any{"PING"}
				}
				return args
			})
			return nil
		}},
}

// wrongNodeFront sends each enqueue's script call to a wrong primary before the bus sends it
// right. The wrong call is answered MOVED, which MONITOR never shows: only the node's INFO
// errorstats tell it.
type wrongNodeFront struct {
	drivers.Driver
	seed string // set by a cluster-mode hello
}

func (f *wrongNodeFront) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	h, err := f.Driver.Hello(ctx, a)
	if err == nil && a.Cluster {
		f.seed = a.Valkey
	}
	return h, err
}

func (f *wrongNodeFront) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if f.seed != "" {
		if q, err := keys.Queue(a.Queue); err == nil {
			_ = misroute(ctx, f.seed, q)
		}
	}
	return f.Driver.Enqueue(ctx, a)
}

// misroute reads the slot map from seed and sends the enqueue script with q's keys to a primary
// that does not own q's slot (after HELLO 2 and a topology read, as a router's map connection
// would), expecting MOVED.
func misroute(ctx context.Context, seed string, q keys.Q) error {
	c, err := connector.Dial(ctx, seed, connector.Options{})
	if err != nil {
		return err
	}
	v, err := c.Do(ctx, "CLUSTER", "SHARDS")
	c.Close()
	if err != nil {
		return err
	}
	shards, err := slotmap.Parse(v, seed)
	if err != nil {
		return err
	}
	wrong, owner := "", slotmap.Owner(shards, int(keys.Slot(q.Pending())))
	for _, sh := range shards {
		if sh.Primary != owner {
			wrong = sh.Primary
		}
	}
	if wrong == "" {
		return errors.New("mutant: no primary outside the queue's slot")
	}
	w, err := connector.Dial(ctx, wrong, connector.Options{})
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := w.Do(ctx, "CLUSTER", "MYID"); err != nil {
		return err
	}
	b, err := lua.Load()
	if err != nil {
		return err
	}
	s := b.MustScript(lua.Enqueue)
	_, err = w.Do(ctx, "EVALSHA", s.SHA1, 4, q.Prefix()+"job:JOB0000000000A", q.Pending(), q.Scheduled(), q.Wake(), "JOB0000000000A", "x", 0)
	return err
}

// standaloneFallback retries a refused cluster-mode hello as a standalone one.
type standaloneFallback struct{ drivers.Driver }

func (f standaloneFallback) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	h, err := f.Driver.Hello(ctx, a)
	if err != nil && a.Cluster && errors.Is(err, emqerr.Server) {
		a.Cluster = false
		return f.Driver.Hello(ctx, a)
	}
	return h, err
}
