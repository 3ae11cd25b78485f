package bus

import (
	"fmt"

	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// qkeys holds a queue's keys, built once, and the static KEYS lists of its scripts. The lists
// are shared read-only by concurrent calls.
type qkeys struct {
	k                                                    keys.Q
	name                                                 string
	pending, active, scheduled, dead, errors, checkpoint string
	meta, wake, ring, lanes, laneof                      string
	claimKeys, laneClaimKeys, reapKeys, promoteKeys      []string
	pauseKeys, resumeKeys, lanePauseKeys                 []string
	// The KEYS after the row key of the fenced scripts.
	completeRest, retryRest, failRest, extendRest, checkpointRest []string
	// The fixed KEYS of the batch scripts; the rows follow, one per item.
	completeBatchKeys, enqueueBatchKeys []string
	enq                                 enqBatcher // Options.BatchEnqueue's batcher
}

// queue returns the cached keys of queue name; EMQKEY for a name outside the grammar.
func (b *Bus) queue(name string) (*qkeys, error) {
	if q, ok := b.queues.Load(name); ok {
		return q.(*qkeys), nil
	}
	kq, err := keys.Queue(name)
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	q := &qkeys{k: kq, name: name,
		pending: kq.Pending(), active: kq.Active(), scheduled: kq.Scheduled(), dead: kq.Dead(),
		errors: kq.Errors(), checkpoint: kq.Ckpt(), meta: kq.Meta(), wake: kq.Wake(), ring: kq.Ring(),
		lanes: kq.Lanes(), laneof: kq.LaneOf()}
	q.claimKeys = []string{q.pending, q.active, q.meta, q.wake, q.checkpoint, q.ring}
	q.laneClaimKeys = []string{q.ring, q.active, q.meta, q.wake, q.checkpoint, q.lanes, q.pending}
	q.reapKeys = []string{q.active, q.pending, q.dead, q.errors, q.wake, q.laneof, q.lanes, q.ring}
	q.promoteKeys = []string{q.scheduled, q.pending, q.wake, q.laneof, q.lanes, q.ring}
	q.pauseKeys = []string{q.meta}
	q.resumeKeys = []string{q.meta, q.pending, q.ring, q.wake}
	q.lanePauseKeys = []string{q.lanes, q.ring}
	q.completeRest = []string{q.active, q.checkpoint, q.errors, q.laneof, q.lanes, q.ring, q.wake}
	q.retryRest = []string{q.active, q.pending, q.scheduled, q.dead, q.errors, q.wake, q.laneof, q.lanes, q.ring}
	q.failRest = []string{q.active, q.dead, q.errors, q.laneof, q.lanes, q.ring, q.wake}
	q.extendRest = []string{q.active}
	q.checkpointRest = []string{q.active, q.checkpoint}
	q.completeBatchKeys = []string{q.active, q.checkpoint, q.errors, q.laneof, q.lanes, q.ring, q.wake}
	q.enqueueBatchKeys = []string{q.pending, q.scheduled, q.wake}
	got, _ := b.queues.LoadOrStore(name, q)
	return got.(*qkeys), nil
}

// job is the row key of id: EMQKIND for another brand, EMQKEY for a malformed id.
func (b *Bus) job(q *qkeys, id string) (string, error) {
	k, err := q.k.Job(id)
	if err != nil {
		return "", fmt.Errorf("bus: %w", err)
	}
	return k, nil
}

// lane is the key of lane g: EMQKEY for a name outside the grammar.
func (b *Bus) lane(q *qkeys, g string) (string, error) {
	k, err := q.k.Lane(g)
	if err != nil {
		return "", fmt.Errorf("bus: %w", err)
	}
	return k, nil
}

// Key is the bus's key builder for queue q: kind is a §2 type name (pending, …, job, lane); id
// names the job for "job", lane the lane for "lane". Refusals are EMQKEY / EMQKIND, and no
// byte reaches the server.
func (b *Bus) Key(q, kind, id, lane string) (string, error) {
	qq, err := b.queue(q)
	if err != nil {
		return "", err
	}
	isJob, isLane := kind == string(keys.KindJob), kind == string(keys.KindLane)
	k, err := qq.k.Key(keys.Kind(kind))
	if err != nil && !isJob && !isLane {
		return "", fmt.Errorf("bus: %w", &emqerr.Error{Type: emqerr.TypeKey, Message: fmt.Sprintf("key type %q is not a queue key type", kind)})
	}
	// A lane or id given is held to its grammar whatever the type (PROTOCOL.md B-90), in canon
	// §2.4's order: the queue, the type, the lane, then the id. Absent, each is "" here.
	var laneKey, jobKey string
	if lane != "" || isLane {
		if laneKey, err = b.lane(qq, lane); err != nil {
			return "", err
		}
	}
	if id != "" || isJob {
		if jobKey, err = b.job(qq, id); err != nil {
			return "", err
		}
	}
	switch {
	case isJob:
		return jobKey, nil
	case isLane:
		return laneKey, nil
	}
	return k, nil
}
