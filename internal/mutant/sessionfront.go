package mutant

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// A session front breaks the port protocol's own rules (PROTOCOL.md Part B): what the port owes
// the conversation beside each op's effect, and the batch ops' duties (A17).
type sessionFront struct {
	drivers.Driver
	opened *protocol.HelloResult
	// hide drops capabilities from hello's answer while the port still answers for them.
	hide []string
	// reHello answers a second hello with the open session's hello.
	reHello bool
	// refusedOnce remembers a refused hello; with doorShut every later hello is refused as a
	// second one, as a port that opens its session before it checks hello's fields.
	refusedOnce, doorShut bool
	// refuseTTL refuses hello's minter_ttl_ms when the capability is hidden; ignoreTTL drops it
	// while the capability stays declared.
	refuseTTL, ignoreTTL bool
	// ignoreCluster drops hello's cluster: true, opening a standalone session instead.
	ignoreCluster bool
	// recycle reopens the port's connections (a reconnect) before an enqueue once this long
	// has passed since the session opened or last reopened them: a port on a timer of its own.
	recycle  time.Duration
	recycled time.Time
	// replyGrace gives an enqueue's reply this long: one later is taken for a lost connection,
	// which the port replaces (a reconnect) before it answers INTERNAL.
	replyGrace time.Duration
	// parkDrainsUnreported completes one more job after a park, left out of its reply.
	parkDrainsUnreported bool
	// parkOvershoots completes one more job per consumer after a park and lists it.
	parkOvershoots bool
	// bracketsKept dials an IPv6 host with its brackets still on, as a port that splits hello's
	// valkey at its last colon and resolves what is left.
	bracketsKept bool
	// brandFirst checks an enqueue's id brand before its lane name (canon §2.4 has the lane first).
	brandFirst bool
	// keyReads makes the key op read the server first, as a builder that checks a queue exists.
	keyReads bool
	// keyMembers answers the key types "name" and "prefix" with the queue's name and its keys'
	// prefix, as a builder that takes any string member of its queue object for a type.
	keyMembers bool
	// clockStays ignores a clock op that returns to the real clock.
	clockStays bool
	// scaleKept returns to the real clock only when the scale is 1 too: a clock op with set_ms
	// 0 and another scale starts a scaled clock from the real time instead.
	scaleKept bool
	// parkFromOne numbers the park op's consumers from 1.
	parkFromOne bool
	// parkLeaseWraps converts the park op's lease_ms through a time.Duration without saturating.
	parkLeaseWraps bool
	// keepRefused leaves a connection open once the session answered its redial's EMQVERSION
	// refusal, as a port that does not close a connection whose fence was refused; the kept
	// connection says HELLO 2, as the refused one did, and is closed with the session.
	keepRefused bool
	addr        string
	kept        net.Conn
	// spareEvery dials one more connection (HELLO 2, kept until Close) before an enqueue once
	// this long has passed since the last: a redial loop that goes on after it has connected.
	spareEvery time.Duration
	spareAt    time.Time
	spares     []net.Conn
	// tiesReversed lists the morgue's deaths of one millisecond newest id first.
	tiesReversed bool
	// capLimit caps reap, promote and morgue at this many (0: no cap).
	capLimit int64
	// batch rewrites the batch ops (nil: they pass through).
	enq   func(protocol.EnqueueBatchArgs, protocol.EnqueueBatchResult) (protocol.EnqueueBatchArgs, protocol.EnqueueBatchResult)
	claim func(protocol.ClaimBatchResult) protocol.ClaimBatchResult
	done  func(protocol.CompleteBatchArgs, protocol.CompleteBatchResult) (protocol.CompleteBatchArgs, protocol.CompleteBatchResult)
}

func (f *sessionFront) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	if f.opened != nil && f.reHello {
		return *f.opened, nil
	}
	if f.doorShut && f.refusedOnce {
		return protocol.HelloResult{}, &emqerr.Error{Type: emqerr.TypeArg, Message: "a second hello on an open session"}
	}
	if f.refuseTTL && a.MinterTTLMS != 0 {
		return protocol.HelloResult{}, &emqerr.Error{Type: emqerr.TypeArg, Message: "minter_ttl_ms is not a field this port knows"}
	}
	if f.ignoreTTL {
		a.MinterTTLMS = 0
	}
	if f.ignoreCluster {
		a.Cluster = false
	}
	if i := strings.LastIndexByte(a.Valkey, ':'); f.bracketsKept && strings.HasPrefix(a.Valkey, "[") && i > 0 {
		a.Valkey = net.JoinHostPort(a.Valkey[:i], a.Valkey[i+1:])
	}
	h, err := f.Driver.Hello(ctx, a)
	if err == nil {
		f.recycled, f.spareAt, f.addr = time.Now(), time.Now(), a.Valkey
		h.Capabilities = slices.DeleteFunc(h.Capabilities, func(c string) bool { return slices.Contains(f.hide, c) })
		f.opened = &h
	}
	f.refusedOnce = f.refusedOnce || err != nil
	return h, err
}

func (f *sessionFront) Clock(ctx context.Context, a protocol.ClockArgs) error {
	if f.clockStays && a.SetMS == 0 {
		return nil
	}
	if f.scaleKept && a.SetMS == 0 && a.Scale > 1 {
		a.SetMS = time.Now().UnixMilli()
	}
	return f.Driver.(drivers.Clocker).Clock(ctx, a)
}

func (f *sessionFront) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if _, err := ids.ParseJob(a.ID); f.brandFirst && a.ID != "" && errors.Is(err, emqerr.Kind) {
		return protocol.EnqueueResult{}, err
	}
	if f.recycle > 0 && time.Since(f.recycled) > f.recycle {
		if err := f.Driver.Reconnect(ctx); err != nil {
			return protocol.EnqueueResult{}, err
		}
		f.recycled = time.Now()
	}
	if f.spareEvery > 0 && time.Since(f.spareAt) > f.spareEvery {
		if c := f.dialHello(ctx); c != nil {
			f.spares, f.spareAt = append(f.spares, c), time.Now()
		}
	}
	if f.replyGrace > 0 {
		return f.enqueueWithin(ctx, a)
	}
	r, err := f.Driver.Enqueue(ctx, a)
	if f.keepRefused && f.kept == nil && errors.Is(err, emqerr.Version) {
		f.kept = f.dialHello(ctx)
	}
	return r, err
}

// enqueueWithin is Enqueue under replyGrace: a reply that has not come within it is a loss.
func (f *sessionFront) enqueueWithin(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	within, cancel := context.WithTimeout(ctx, f.replyGrace)
	defer cancel()
	r, err := f.Driver.Enqueue(within, a)
	if err != nil && ctx.Err() == nil && errors.Is(within.Err(), context.DeadlineExceeded) {
		if rerr := f.Driver.Reconnect(ctx); rerr != nil {
			return r, rerr
		}
		return r, errors.New("no reply within the grace: the connection was taken for lost and replaced")
	}
	return r, err
}

// dialHello dials the session's server and says HELLO 2 on a connection the caller keeps until
// Close (nil when the dial fails).
func (f *sessionFront) dialHello(ctx context.Context) net.Conn {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", f.addr)
	if err != nil {
		return nil
	}
	_, _ = c.Write(hello2)
	return c
}

func (f *sessionFront) Close(ctx context.Context) error {
	if f.kept != nil {
		f.kept.Close()
		f.kept = nil
	}
	for _, c := range f.spares {
		c.Close()
	}
	f.spares = nil
	return f.Driver.Close(ctx)
}

func (f *sessionFront) Key(ctx context.Context, a protocol.KeyArgs) (protocol.KeyResult, error) {
	if f.keyReads && keys.ValidName(a.Queue) {
		if _, err := f.Driver.Morgue(ctx, protocol.MorgueArgs{Queue: a.Queue, Limit: 1}); err != nil {
			return protocol.KeyResult{}, err
		}
	}
	if f.keyMembers && keys.ValidName(a.Queue) && (a.Type == "name" || a.Type == "prefix") {
		if a.Type == "name" {
			return protocol.KeyResult{Key: a.Queue}, nil
		}
		return protocol.KeyResult{Key: "emq:{" + a.Queue + "}:"}, nil
	}
	return f.Driver.Key(ctx, a)
}

func (f *sessionFront) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	if f.parkLeaseWraps {
		a.LeaseMS = int64(time.Duration(a.LeaseMS) * time.Millisecond / time.Millisecond)
	}
	r, err := f.Driver.Park(ctx, a)
	for i := range r.Jobs {
		if f.parkFromOne {
			r.Jobs[i].Consumer++
		}
	}
	if f.parkDrainsUnreported && err == nil {
		f.completeOneMore(ctx, a)
	}
	for i := 0; f.parkOvershoots && err == nil && a.Jobs > 0 && i < a.Consumers; i++ {
		c := f.completeOneMore(ctx, a)
		if c == nil {
			break
		}
		r.Jobs = append(r.Jobs, protocol.Parked{Consumer: i, ID: c.ID, Token: c.Token})
	}
	return r, err
}

// completeOneMore claims and completes one more job of a's queue after the park (nil when none
// was completed): a consumer that went on claiming past jobs.
func (f *sessionFront) completeOneMore(ctx context.Context, a protocol.ParkArgs) *protocol.ClaimResult {
	c, err := f.Driver.Claim(ctx, protocol.ClaimArgs{Queue: a.Queue, LeaseMS: a.LeaseMS})
	if err != nil || c == nil || f.Driver.Complete(ctx, protocol.FenceArgs{Queue: a.Queue, ID: c.ID, Token: c.Token}) != nil {
		return nil
	}
	return c
}

func (f *sessionFront) capped(n int64) int64 {
	if f.capLimit > 0 && (n == 0 || n > f.capLimit) {
		return f.capLimit
	}
	return n
}

func (f *sessionFront) Reap(ctx context.Context, a protocol.ReapArgs) (protocol.CountResult, error) {
	a.Limit = f.capped(a.Limit)
	return f.Driver.Reap(ctx, a)
}

func (f *sessionFront) Promote(ctx context.Context, a protocol.PromoteArgs) (protocol.CountResult, error) {
	a.Limit = f.capped(a.Limit)
	return f.Driver.Promote(ctx, a)
}

func (f *sessionFront) Morgue(ctx context.Context, a protocol.MorgueArgs) (protocol.MorgueResult, error) {
	a.Limit = f.capped(a.Limit)
	r, err := f.Driver.Morgue(ctx, a)
	if f.tiesReversed && err == nil {
		// Each run of equal death times, newest id first.
		for i := 0; i < len(r.Jobs); {
			j := i
			for j < len(r.Jobs) && r.Jobs[j].DiedMS == r.Jobs[i].DiedMS {
				j++
			}
			slices.Reverse(r.Jobs[i:j])
			i = j
		}
	}
	return r, err
}

func (f *sessionFront) EnqueueBatch(ctx context.Context, a protocol.EnqueueBatchArgs) (protocol.EnqueueBatchResult, error) {
	if f.enq != nil {
		a, _ = f.enq(a, protocol.EnqueueBatchResult{})
	}
	r, err := f.Driver.(drivers.Batcher).EnqueueBatch(ctx, a)
	if f.enq != nil && err == nil {
		_, r = f.enq(a, r)
	}
	return r, err
}

func (f *sessionFront) ClaimBatch(ctx context.Context, a protocol.ClaimBatchArgs) (protocol.ClaimBatchResult, error) {
	r, err := f.Driver.(drivers.Batcher).ClaimBatch(ctx, a)
	if f.claim != nil && err == nil {
		r = f.claim(r)
	}
	return r, err
}

func (f *sessionFront) CompleteBatch(ctx context.Context, a protocol.CompleteBatchArgs) (protocol.CompleteBatchResult, error) {
	if f.done != nil {
		a, _ = f.done(a, protocol.CompleteBatchResult{})
	}
	r, err := f.Driver.(drivers.Batcher).CompleteBatch(ctx, a)
	if f.done != nil && err == nil {
		_, r = f.done(a, r)
	}
	return r, err
}

// sessionWrap is a Go mutant of a session front configured by set.
func sessionWrap(set func(*sessionFront)) func(*bus.Options) Wrap {
	return front(func(d drivers.Driver) drivers.Driver {
		f := &sessionFront{Driver: d}
		set(f)
		return f
	})
}

// sessionMutants break the port protocol's own rules and the batch ops' duties.
var sessionMutants = []Spec{
	{Name: "unknown-op-accepted", Contract: "C01", Rule: "unknown-op", Defect: "an op the protocol does not have is answered ok with an empty result, not UNSUPPORTED",
		Go: jsonWrap(func(op string, _ map[string]json.RawMessage) (json.RawMessage, error) {
			if !slices.Contains(protocol.Ops, op) {
				return json.RawMessage("{}"), nil
			}
			return nil, nil
		})},
	{Name: "second-hello-accepted", Contract: "C01", Rule: "second-hello", Defect: "a second hello on the open session answers the first hello again instead of EMQARG",
		Go: sessionWrap(func(f *sessionFront) { f.reHello = true })},
	{Name: "refused-hello-opens-session", Contract: "C01", Rule: "hello-op", Defect: "a refused hello opens the session all the same: every later hello to the process is refused as a second one",
		Go: sessionWrap(func(f *sessionFront) { f.doorShut = true })},
	{Name: "clock-undeclared-answers", Contract: "C01", Rule: "aid-unsupported", Defect: "the port does not declare the clock capability, yet answers the clock op ok instead of UNSUPPORTED",
		Go: sessionWrap(func(f *sessionFront) { f.hide = []string{protocol.CapClock} })},
	{Name: "batch-undeclared-answers", Contract: "C01", Rule: "aid-unsupported", Defect: "the port does not declare the batch capability, yet answers the batch ops (a malformed one EMQARG) instead of UNSUPPORTED",
		Go: sessionWrap(func(f *sessionFront) { f.hide = []string{protocol.CapBatch} })},
	{Name: "cluster-undeclared-ignored", Contract: "C01", Rule: "cluster-refused", Defect: "the port does not declare the cluster capability, yet answers hello's cluster: true against a standalone server with a standalone session instead of an error (the Node port until this release)",
		Go: sessionWrap(func(f *sessionFront) { f.hide, f.ignoreCluster = []string{protocol.CapCluster}, true })},
	{Name: "ipv6-brackets-kept", Contract: "C01", Rule: "valkey-ipv6", Defect: "hello's valkey with an IPv6 host ([::1]:port) is dialled with the brackets kept in the host, so the connect fails and hello answers an error",
		Go: sessionWrap(func(f *sessionFront) { f.bracketsKept = true })},
	{Name: "park-completes-unreported", Contract: "C14", Rule: "park-reports-all", Defect: "the park's consumers go on claiming past jobs and complete one job more than the reply lists (a reply cut to jobs: the work is done and never reported)",
		Go: sessionWrap(func(f *sessionFront) { f.parkDrainsUnreported = true })},
	{Name: "park-drains-the-backlog", Contract: "C14", Rule: "park-claims-bounded", Defect: "the park's consumers go on claiming after the jobs-th completion: each completes one job more, listed in the reply",
		Go: sessionWrap(func(f *sessionFront) { f.parkOvershoots = true })},
	{Name: "connections-recycled", Contract: "C01", Rule: "connections-kept", Defect: "the port reopens its connections on a timer of its own (every 2 s), while the server answers",
		Go: sessionWrap(func(f *sessionFront) { f.recycle = 2 * time.Second })},
	{Name: "late-reply-given-up", Contract: "C01", Rule: "late-reply", Defect: "the port gives an enqueue's reply 2 s: a later one is taken for a lost connection, which the port replaces before it answers INTERNAL (a health check that counts silence from the last reply, not from the request)",
		Go: sessionWrap(func(f *sessionFront) { f.replyGrace = 2 * time.Second })},
	{Name: "redial-goes-on", Contract: "C01", Rule: "redial-once", Defect: "the port dials one more connection every second while the server answers and keeps each one open, as a redial loop that goes on dialing once it has connected",
		Go: sessionWrap(func(f *sessionFront) { f.spareEvery = time.Second })},
	{Name: "refused-connection-kept", Contract: "C01", Rule: "refused-closed", Defect: "a connection whose fence was refused (another bundle deployed while the port was cut off) is left open: the refused session keeps a connection to the server",
		Go: sessionWrap(func(f *sessionFront) { f.keepRefused = true })},
	{Name: "morgue-ties-newest-first", Contract: "C10", Rule: "morgue-tie-order", Defect: "the morgue lists deaths of the same millisecond newest id first (a ZREVRANGE within each death time)",
		Go: sessionWrap(func(f *sessionFront) { f.tiesReversed = true })},
	{Name: "ttl-undeclared-refused", Contract: "C01", Rule: "aid-ignored", Defect: "a port without the minter_ttl capability refuses hello's minter_ttl_ms instead of ignoring it",
		Go: sessionWrap(func(f *sessionFront) { f.hide, f.refuseTTL = []string{protocol.CapMinterTTL}, true })},
	{Name: "ttl-declared-ignored", Contract: "C02", Rule: "aid-minter-ttl", Defect: "the port declares the minter_ttl capability but leases for its own default, whatever hello's minter_ttl_ms",
		Go: sessionWrap(func(f *sessionFront) { f.ignoreTTL = true })},
	{Name: "brand-before-lane", Contract: "C04", Rule: "check-order", Defect: "an enqueue checks its id's brand before its lane name: a wrong-brand id into a bad lane is EMQKIND, not EMQKEY",
		Go: sessionWrap(func(f *sessionFront) { f.brandFirst = true })},
	{Name: "key-type-members", Contract: "C04", Rule: "key-builder", Defect: "the key op takes the string members of its queue object for types: type name answers the queue's name, type prefix its keys' prefix emq:{q}:, neither a key of the grammar (red team 56's node-key-type-own-property)",
		Go: sessionWrap(func(f *sessionFront) { f.keyMembers = true })},
	{Name: "key-reads-server", Contract: "C02", Rule: "key-ops-offline", Defect: "the key op reads the queue on the server before it builds the key",
		Go: sessionWrap(func(f *sessionFront) { f.keyReads = true })},
	{Name: "scale-kept-on-real", Contract: "C05", Rule: "clock-real", Defect: "a clock op with set_ms absent or 0 and a scale other than 1 starts a clock from the real time that advances 1 ms per scale real ms, instead of returning to the real clock",
		Go: sessionWrap(func(f *sessionFront) { f.scaleKept = true })},
	{Name: "clock-reset-ignored", Contract: "C05", Rule: "clock-real", Defect: "a clock op that returns to the real clock is ignored: the minter stays on the scripted one",
		Go: sessionWrap(func(f *sessionFront) { f.clockStays = true })},
	{Name: "park-consumers-from-one", Contract: "C14", Rule: "park-consumer", Defect: "the park op numbers its consumers from 1, so the last one is out of 0..consumers-1",
		Go: sessionWrap(func(f *sessionFront) { f.parkFromOne = true })},
	{Name: "park-lease-wraps", Contract: "C14", Rule: "field-range", Defect: "the park op's lease_ms goes through a time.Duration unsaturated: at 1e14 ms (in its domain) it wraps, and the consumers lease their claims for a wrapped time",
		Go: sessionWrap(func(f *sessionFront) { f.parkLeaseWraps = true })},
	{Name: "reap-limit-capped", Contract: "C11", Rule: "A16-limit", Defect: "reap settles at most 1000 per call whatever its limit (10000 allowed)",
		Go: sessionWrap(func(f *sessionFront) { f.capLimit = 1000 })},
	{Name: "batch-enqueue-ignores-delay", Contract: "C02", Rule: "A17-enqueue-batch", Defect: "enqueue_batch enqueues every job at once, ignoring its delay_ms",
		Go: sessionWrap(func(f *sessionFront) {
			f.enq = func(a protocol.EnqueueBatchArgs, r protocol.EnqueueBatchResult) (protocol.EnqueueBatchArgs, protocol.EnqueueBatchResult) {
				a.Jobs = slices.Clone(a.Jobs)
				for i := range a.Jobs {
					a.Jobs[i].DelayMS = 0
				}
				return a, r
			}
		})},
	{Name: "batch-duplicate-created", Contract: "C03", Rule: "A17-enqueue-batch", Defect: "enqueue_batch answers created: true for a duplicate id",
		Go: sessionWrap(func(f *sessionFront) {
			f.enq = func(a protocol.EnqueueBatchArgs, r protocol.EnqueueBatchResult) (protocol.EnqueueBatchArgs, protocol.EnqueueBatchResult) {
				for i := range r.Jobs {
					r.Jobs[i].Created = true
				}
				return a, r
			}
		})},
	{Name: "claim-batch-newest-first", Contract: "C06", Rule: "A17-claim-batch", Defect: "claim_batch lists its claims newest first",
		Go: sessionWrap(func(f *sessionFront) {
			f.claim = func(r protocol.ClaimBatchResult) protocol.ClaimBatchResult { slices.Reverse(r.Jobs); return r }
		})},
	{Name: "complete-batch-drops-last", Contract: "C08", Rule: "A17-complete-batch", Defect: "complete_batch settles all pairs but the last, and answers ok for it",
		Go: sessionWrap(func(f *sessionFront) {
			f.done = func(a protocol.CompleteBatchArgs, r protocol.CompleteBatchResult) (protocol.CompleteBatchArgs, protocol.CompleteBatchResult) {
				if r.Results == nil && len(a.Jobs) > 1 {
					a.Jobs = a.Jobs[:len(a.Jobs)-1]
					return a, r
				}
				if len(r.Results) > 0 {
					r.Results = append(r.Results, protocol.PairResult{OK: true})
				}
				return a, r
			}
		})},
	{Name: "complete-batch-stale-ok", Contract: "C07", Rule: "A17-stale-pair", Defect: "complete_batch answers ok for a stale pair",
		Go: sessionWrap(func(f *sessionFront) {
			f.done = func(a protocol.CompleteBatchArgs, r protocol.CompleteBatchResult) (protocol.CompleteBatchArgs, protocol.CompleteBatchResult) {
				for i := range r.Results {
					r.Results[i] = protocol.PairResult{OK: true}
				}
				return a, r
			}
		})},
}
