package contracts

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// fencedOp is one fenced op of staleEvery, sent with the (id, token) under test.
type fencedOp struct {
	name string
	run  func() error
}

// staleEvery tries every fenced op (complete, retry with and without a delay, fail, checkpoint
// of odd bytes, extend, and complete_batch of the one pair for a port offering the batch ops)
// with (id, token): each must answer EMQSTALE under rule, and the whole keyspace must be
// unchanged after each (rules.FencedNoChange).
func (t *T) staleEvery(qn, id string, token int64, why string, rule rules.Rule) {
	f := fa(qn, id, token)
	what := fmt.Sprintf("%%s of %s with token %d %s", id, token, why)
	ops := []fencedOp{
		{"complete", func() error { return t.D.Complete(t.ctx, f) }},
		{"retry", func() error {
			_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: f, MaxAttempts: 5, Error: "zombie"})
			return err
		}},
		{"delayed retry", func() error {
			_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: f, MaxAttempts: 5, DelayMS: 5000, Error: "zombie"})
			return err
		}},
		{"retry at the limit", func() error {
			_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: f, MaxAttempts: 1, Error: "zombie"})
			return err
		}},
		{"fail", func() error { return t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: f, Error: "zombie"}) }},
		{"checkpoint", func() error {
			return t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: f, DataB64: b64("zombie\x00\xff")})
		}},
		{"extend", func() error {
			_, err := t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: f, LeaseMS: 60000})
			return err
		}},
	}
	if b, ok := t.D.(drivers.Batcher); ok && slices.Contains(t.Hello.Capabilities, protocol.CapBatch) {
		// A17-3: the batch form is held to everything complete is held to, its pair's refusal
		// included (a pair's outcome stands in for the op's error).
		ops = append(ops, fencedOp{"complete_batch", func() error {
			r, err := b.CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: qn, Jobs: []protocol.Pair{{ID: id, Token: token}}})
			if err != nil || len(r.Results) != 1 {
				return cmp.Or(err, fmt.Errorf("%d results for one pair", len(r.Results)))
			}
			return pairErr(r.Results[0])
		}})
	}
	for _, op := range ops {
		before := t.snapshot()
		t.refused(op.run(), emqerr.Stale, rule, fmt.Sprintf(what, op.name))
		d := diff(before, t.snapshot())
		t.check(d == "", rules.FencedNoChange, fmt.Sprintf(what, op.name)+" is refused and changes nothing", "%s", d)
	}
}

// pairErr is a complete_batch pair's outcome as the error complete would have answered: nil
// when it settled, else its wire error as a typed error (an INTERNAL one matches no canon type).
func pairErr(r protocol.PairResult) error {
	switch {
	case r.OK:
		return nil
	case r.Error == nil:
		return errors.New("a failed pair with no error")
	}
	return &emqerr.Error{Type: emqerr.Type(r.Error.Type), Message: r.Error.Message}
}

// rangeCase is one out-of-range argument: the op with it must answer EMQARG and change nothing.
type rangeCase struct {
	what string
	rule rules.Rule
	run  func() error
}

// refusedArg runs each case, requiring EMQARG and an unchanged keyspace.
func (t *T) refusedArg(cases []rangeCase) {
	for _, c := range cases {
		before := t.snapshot()
		t.refused(c.run(), emqerr.Arg, c.rule, c.what)
		d := diff(before, t.snapshot())
		t.check(d == "", c.rule, c.what+" is refused and changes nothing", "%s", d)
	}
}

// onlyKeys requires the queue's keys (besides its wake) to be exactly want.
func (t *T) onlyKeys(qn string, rule rules.Rule, want ...string) {
	q := t.q(qn)
	var got []string
	for _, k := range t.allKeys() {
		if strings.HasPrefix(k, q.Prefix()) && k != q.Wake() {
			got = append(got, k)
		}
	}
	slices.Sort(want)
	t.check(strings.Join(got, " ") == strings.Join(want, " "), rule,
		fmt.Sprintf("the queue's keys besides its wake are exactly %v", want), "%v", got)
}

// retried retries (id, token) with delay and requires the outcome retried.
func (t *T) retried(qn, id string, token, delay int64) {
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa(qn, id, token), MaxAttempts: 100, DelayMS: delay, Error: "again"})
	t.ok(err, rules.Retry, "retry")
	t.check(r.Outcome == "retried", rules.Retry, "retry below max_attempts answers retried", "%q", r.Outcome)
}

// extendTouchedOnlyItsLease requires an extend of id to have changed nothing but id's score in
// active: the row (its attempts, the token) and every other lease are as they were.
func (t *T) extendTouchedOnlyItsLease(before map[string]string, members []string, scores map[string]int64, id string) {
	q := t.q("orders")
	after := t.snapshot()
	row := jobKey(q, id)
	t.check(before[row] == after[row], rules.Tokens, "extend leaves the row (attempts, the token) unchanged", "%s → %s", before[row], after[row])
	delete(before, q.Active())
	delete(after, q.Active())
	d := diff(before, after)
	t.check(d == "", rules.Extend, "extend changes no key but active", "%s", d)
	now, nowScores := t.zset(q.Active())
	same := slices.Equal(slices.Sorted(slices.Values(now)), slices.Sorted(slices.Values(members)))
	for _, m := range members {
		same = same && (m == id || nowScores[m] == scores[m])
	}
	t.check(same, rules.Extend, "extend moves only the lease of "+id, "active %v", now)
}
