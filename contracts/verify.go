package contracts

import (
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
)

func argAt(l Line, i int) string { return l.Arg(i) }

// validJob checks a port-minted id against canon §3.
func (t *T) validJob(id string) uint64 {
	sf, err := ids.ParseJob(id)
	t.cover(rules.IDs)
	if err != nil || len(id) != 14 || !strings.HasPrefix(id, "JOB") {
		t.fail(rules.IDs, "a 14-byte JOB id", fmt.Sprintf("%q (%v)", id, err))
	}
	return sf
}

// leaseWithin checks an active score against server TIME bounds taken around the claim.
func (t *T) leaseWithin(key, id string, before, after, lease int64, rule rules.Rule) int64 {
	score, ok := t.zscore(key, id)
	t.check(ok && score >= before+lease && score <= after+lease, rule,
		fmt.Sprintf("%s in %s at server TIME + %d, within [%d, %d]", id, key, lease, before+lease, after+lease),
		"present %v, score %d", ok, score)
	return score
}

func (t *T) state(qn, id, want string, attempts int64, rule rules.Rule) {
	row := t.hash(jobKey(t.q(qn), id))
	t.check(row["state"] == want && row["attempts"] == fmt.Sprint(attempts), rule,
		fmt.Sprintf("row state %s, attempts %d", want, attempts), "row %q", row)
}

func (t *T) in(key, id string, want bool, rule rules.Rule) {
	t.cover(rule)
	_, ok := t.zscore(key, id)
	if ok != want {
		what := map[bool]string{true: "in", false: "not in"}
		t.fail(rule, fmt.Sprintf("%s %s %s", id, what[want], key), fmt.Sprintf("%s %s %s", id, what[ok], key))
	}
}

// allStale tries every fenced op with token and expects EMQSTALE and no change at all.
func (t *T) allStale(qn, id string, token int64, why string) {
	before := t.snapshot()
	f := fa(qn, id, token)
	t.refused(t.D.Complete(t.ctx, f), emqerr.Stale, rules.Fenced, "complete "+why)
	_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: f, MaxAttempts: 5, DelayMS: 0, Error: "zombie"})
	t.refused(err, emqerr.Stale, rules.Fenced, "retry "+why)
	t.refused(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: f, Error: "zombie"}), emqerr.Stale, rules.Fenced, "fail "+why)
	t.refused(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: f, DataB64: b64("zombie")}), emqerr.Stale, rules.Fenced, "checkpoint "+why)
	_, err = t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: f, LeaseMS: 60000})
	t.refused(err, emqerr.Stale, rules.Fenced, "extend "+why)
	d := diff(before, t.snapshot())
	t.check(d == "", rules.Fenced, "refused transitions change nothing", "%s", d)
}
