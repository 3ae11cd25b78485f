package protocol

import "encoding/json"

// The port protocol's wire shapes (contracts/PROTOCOL.md Part B, Ops). One JSON object per line each way.
// Field names here are the protocol: the subprocess driver encodes them, the reference port
// decodes them, and port-protocol.schema.json (Schema) describes them.

// Request is one line sent to a port. Args carries the op's own fields at the top level.
type Request struct {
	Seq uint64 `json:"seq"`
	Op  string `json:"op"`
}

// Reply is one line a port answers, in request order.
type Reply struct {
	Seq    uint64          `json:"seq"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *WireError      `json:"error,omitempty"`
}

// WireError is the error object of a failed reply. Type is one of the canon's six EMQ types,
// UNSUPPORTED (an op the port does not implement) or INTERNAL (anything else).
type WireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Error types beyond the canon's six.
const (
	ErrTypeUnsupported = "UNSUPPORTED"
	ErrTypeInternal    = "INTERNAL"
)

// HelloArgs opens the session: the port connects to Valkey at Valkey and runs the fence.
type HelloArgs struct {
	// Valkey is the server's host:port; with Cluster, one node of the cluster (a seed): the port
	// reads the slot map from it and connects to every primary itself.
	Valkey string `json:"valkey"`
	// Cluster asks the port to open in cluster mode against the Valkey Cluster Valkey belongs
	// to. Only a port that declares CapCluster honours it; any other port answers an error
	// (typically EMQSERVER: a cluster node is not the standalone server it checks for).
	Cluster bool `json:"cluster,omitempty"`
	// MinterTTLMS, when set, asks for a minter lease of that many milliseconds instead of the
	// port's default: a test aid, so the minter-lease clauses see a renewal (every ttl/3) within
	// a short clause. A port that honours it lists CapMinterTTL in its capabilities; others
	// ignore it.
	MinterTTLMS int64 `json:"minter_ttl_ms,omitempty"`
}

// Capabilities a port may declare in hello: optional test aids beyond the contracts.
const (
	// CapClock: the port implements the clock op (its minter's clock can be scripted).
	CapClock = "clock"
	// CapMinterTTL: the port honours hello's minter_ttl_ms.
	CapMinterTTL = "minter_ttl"
	// CapCluster: the port supports cluster mode (hello's cluster): routing by hashtag to the
	// owning primary, fence on every primary. `make conform CLUSTER=1` certifies only such ports.
	CapCluster = "cluster"
)

// HelloResult names the port and declares the contracts it claims.
type HelloResult struct {
	Name    string   `json:"name"`
	Runtime string   `json:"runtime"`
	Bundle  string   `json:"bundle"`
	Digest  string   `json:"digest"`
	Claims  []string `json:"claims"`
	// Capabilities lists the optional test aids the port offers (CapClock, CapMinterTTL) and
	// whether it supports cluster mode (CapCluster).
	Capabilities []string `json:"capabilities,omitempty"`
}

// ClockArgs scripts the port's minter clock (the clock op, capability CapClock): from this op
// on, the clock the snowflake's milliseconds come from reads SetMS (Unix milliseconds) and then
// advances one millisecond per Scale real milliseconds (0 or 1: real speed). SetMS 0 returns
// the minter to the real clock. Lease expiry stays on the real clock whatever this says.
type ClockArgs struct {
	SetMS int64 `json:"set_ms,omitempty"`
	Scale int64 `json:"scale,omitempty"`
}

// MintArgs asks for N ids from each of Parallel concurrent minting callers (default 1).
// N is required on the wire even when 0 (no omitempty on required fields: PROTOCOL.md says a
// missing required field is EMQARG, so the kit must never leave one out).
type MintArgs struct {
	N        int `json:"n"`
	Parallel int `json:"parallel,omitempty"`
}

// MintResult holds one list per caller, each in the order that caller received its ids.
type MintResult struct {
	IDs [][]string `json:"ids"`
}

// KeyArgs asks the port's key builder for a key. Type is a canon §2 type name (pending, active,
// scheduled, dead, errors, ckpt, meta, wake, ring, lanes, laneof, job, lane).
type KeyArgs struct {
	Queue string `json:"queue"`
	Type  string `json:"type"`
	ID    string `json:"id,omitempty"`
	Lane  string `json:"lane,omitempty"`
}

// KeyResult is a built key.
type KeyResult struct {
	Key string `json:"key"`
}

// SlotArgs asks for the cluster slot of a key.
type SlotArgs struct {
	Key string `json:"key"`
}

// SlotResult is a key's slot, 0–16383.
type SlotResult struct {
	Slot int `json:"slot"`
}

// EnqueueArgs enqueues one job. ID empty: the port mints one. Lane non-empty: into that lane.
type EnqueueArgs struct {
	Queue      string `json:"queue"`
	ID         string `json:"id,omitempty"`
	PayloadB64 string `json:"payload_b64"`
	DelayMS    int64  `json:"delay_ms"` // optional for a port (absent = 0); the kit always sends it
	Lane       string `json:"lane,omitempty"`
}

// EnqueueResult tells the id and whether a row was created (false: a duplicate, nothing changed).
type EnqueueResult struct {
	ID      string `json:"id"`
	Created bool   `json:"created"`
}

// ClaimArgs claims from the queue's pending set (claim) or by rotating its lane ring (lane_claim).
type ClaimArgs struct {
	Queue   string `json:"queue"`
	LeaseMS int64  `json:"lease_ms"`
}

// ClaimResult is a claimed job, or null in the reply when nothing was claimable.
type ClaimResult struct {
	ID            string  `json:"id"`
	PayloadB64    string  `json:"payload_b64"`
	Token         int64   `json:"token"`
	CheckpointB64 *string `json:"checkpoint_b64"`
	Lane          string  `json:"lane,omitempty"`
}

// FenceArgs names a claimed job by (id, token): complete, fail, extend, checkpoint, retry.
type FenceArgs struct {
	Queue string `json:"queue"`
	ID    string `json:"id"`
	Token int64  `json:"token"`
}

// ExtendArgs moves a lease's deadline to server TIME + LeaseMS.
type ExtendArgs struct {
	FenceArgs
	LeaseMS int64 `json:"lease_ms"`
}

// ExtendResult is the new deadline in server milliseconds.
type ExtendResult struct {
	DeadlineMS int64 `json:"deadline_ms"`
}

// RetryArgs retries a claimed job after DelayMS, or buries it at MaxAttempts.
type RetryArgs struct {
	FenceArgs
	MaxAttempts int64  `json:"max_attempts"`
	DelayMS     int64  `json:"delay_ms"`
	Error       string `json:"error"`
}

// RetryResult's Outcome is "retried" or "dead".
type RetryResult struct {
	Outcome string `json:"outcome"`
}

// FailArgs dead-letters a claimed job with its error.
type FailArgs struct {
	FenceArgs
	Error string `json:"error"`
}

// CheckpointArgs stores bytes for the current attempt.
type CheckpointArgs struct {
	FenceArgs
	DataB64 string `json:"data_b64"`
}

// ReapArgs returns expired leases; MaxAttempts decides between redelivery and the morgue.
type ReapArgs struct {
	Queue       string `json:"queue"`
	MaxAttempts int64  `json:"max_attempts"`
	Limit       int64  `json:"limit,omitempty"`
}

// PromoteArgs moves due scheduled jobs to pending (or their lane).
type PromoteArgs struct {
	Queue string `json:"queue"`
	Limit int64  `json:"limit,omitempty"`
}

// CountResult answers reap and promote.
type CountResult struct {
	Count int64 `json:"count"`
}

// JobArgs names a job by id alone: revive, purge.
type JobArgs struct {
	Queue string `json:"queue"`
	ID    string `json:"id"`
}

// ChangedResult answers revive and purge: false when the id was not in the morgue.
type ChangedResult struct {
	Changed bool `json:"changed"`
}

// MorgueArgs lists the morgue, oldest death first.
type MorgueArgs struct {
	Queue string `json:"queue"`
	Limit int64  `json:"limit,omitempty"`
}

// DeadJob is one morgue entry.
type DeadJob struct {
	ID         string `json:"id"`
	Attempts   int64  `json:"attempts"`
	PayloadB64 string `json:"payload_b64"`
	Error      string `json:"error"`
	DiedMS     int64  `json:"died_ms"`
}

// MorgueResult lists dead jobs.
type MorgueResult struct {
	Jobs []DeadJob `json:"jobs"`
}

// QueueArgs is the Go-side argument of the queue and lane ops (pause, resume, lane_pause,
// lane_resume, lane_ceiling). It is never encoded as it is: Wire gives each op its own shape,
// so that lane_ceiling's required ceiling travels even when it is 0 and pause carries no lane.
type QueueArgs struct {
	Queue   string `json:"queue"`
	Lane    string `json:"lane,omitempty"`
	Ceiling int64  `json:"ceiling,omitempty"`
}

// PauseArgs is the wire shape of pause and resume.
type PauseArgs struct {
	Queue string `json:"queue"`
}

// LaneArgs is the wire shape of lane_pause and lane_resume.
type LaneArgs struct {
	Queue string `json:"queue"`
	Lane  string `json:"lane"`
}

// CeilingArgs is the wire shape of lane_ceiling: ceiling is required, 0 removes the ceiling.
type CeilingArgs struct {
	Queue   string `json:"queue"`
	Lane    string `json:"lane"`
	Ceiling int64  `json:"ceiling"`
}

// Wire is the request body op sends for a, in the op's own shape.
func (a QueueArgs) Wire(op string) any {
	switch op {
	case "lane_pause", "lane_resume":
		return LaneArgs{Queue: a.Queue, Lane: a.Lane}
	case "lane_ceiling":
		return CeilingArgs{Queue: a.Queue, Lane: a.Lane, Ceiling: a.Ceiling}
	}
	return PauseArgs{Queue: a.Queue}
}

// ParkArgs runs Consumers consumers on the queue until Jobs jobs were claimed (and completed) in
// all, or TimeoutMS passed. Idle consumers park on the wake key with blocking pops of ParkMS.
type ParkArgs struct {
	Queue     string `json:"queue"`
	Consumers int    `json:"consumers"`
	Jobs      int    `json:"jobs"`
	LeaseMS   int64  `json:"lease_ms"`
	ParkMS    int64  `json:"park_ms"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// Parked is one job a parked consumer was woken for and completed.
type Parked struct {
	Consumer int    `json:"consumer"`
	ID       string `json:"id"`
	Token    int64  `json:"token"`
}

// ParkResult lists what the consumers did, in completion order.
type ParkResult struct {
	Jobs []Parked `json:"jobs"`
}

// Empty is the result of ops that answer nothing but success.
type Empty struct{}

// Ops lists every op of the protocol, in the order PROTOCOL.md documents them.
var Ops = []string{
	"hello", "mint", "key", "slot", "enqueue", "claim", "lane_claim", "extend", "complete",
	"retry", "fail", "checkpoint", "reap", "promote", "morgue", "revive", "purge",
	"pause", "resume", "lane_pause", "lane_resume", "lane_ceiling", "park", "reconnect", "close", "clock",
	"enqueue_batch", "claim_batch", "complete_batch",
}

// CapBatch: the port implements the batch ops enqueue_batch, claim_batch and complete_batch
// (A17): the contracts that own the single-job ops drive them too.
const CapBatch = "batch"

// BatchOps are the optional batch ops, offered by a port declaring CapBatch.
var BatchOps = []string{"enqueue_batch", "claim_batch", "complete_batch"}

// BatchJob is one job of an enqueue_batch: as enqueue, without a lane.
type BatchJob struct {
	ID         string `json:"id,omitempty"`
	PayloadB64 string `json:"payload_b64"`
	DelayMS    int64  `json:"delay_ms"`
}

// EnqueueBatchArgs enqueues Jobs (1..1000) in order, each exactly as enqueue would.
type EnqueueBatchArgs struct {
	Queue string     `json:"queue"`
	Jobs  []BatchJob `json:"jobs"`
}

// EnqueueBatchResult has one enqueue result per job, in request order.
type EnqueueBatchResult struct {
	Jobs []EnqueueResult `json:"jobs"`
}

// ClaimBatchArgs claims up to N (1..1000) of the oldest pending jobs, each exactly as claim.
type ClaimBatchArgs struct {
	Queue   string `json:"queue"`
	LeaseMS int64  `json:"lease_ms"`
	N       int64  `json:"n"`
}

// ClaimBatchResult lists the claimed jobs, oldest first (empty when none was claimable).
type ClaimBatchResult struct {
	Jobs []ClaimResult `json:"jobs"`
}

// Pair names one claimed job of a complete_batch.
type Pair struct {
	ID    string `json:"id"`
	Token int64  `json:"token"`
}

// CompleteBatchArgs settles Jobs (1..1000) in order, each fenced on its own pair.
type CompleteBatchArgs struct {
	Queue string `json:"queue"`
	Jobs  []Pair `json:"jobs"`
}

// PairResult is one pair's outcome: OK, or the error complete would have answered (EMQSTALE).
type PairResult struct {
	OK    bool       `json:"ok"`
	Error *WireError `json:"error,omitempty"`
}

// CompleteBatchResult has one outcome per pair, in request order.
type CompleteBatchResult struct {
	Results []PairResult `json:"results"`
}
