package contracts

import (
	"cmp"
	"slices"
)

// Rule is one rule of the canon or of contracts/PROTOCOL.md that clauses check. A clause records
// every rule it evaluates; TRACEABILITY.md maps each rule to those clauses and to the mutants
// that break it, and TestTraceability fails when a rule has no clause or no mutant.
type Rule struct {
	ID    string // stable key, e.g. "complete" or "A7-ceiling"
	Quote string // where the rule is written and what it says: a failure's RULE line
}

func (r Rule) String() string { return r.Quote }

// The rules the contracts quote.
var (
	ruleClock        = Rule{"clock", `canon §1.4: "The server's clock owns time. Leases, due times and death times come from TIME inside the script. Clients send durations (lease_ms, delay_ms), never instants"`}
	ruleIDs          = Rule{"id-format", `canon §3: "A JOB id is 14 ASCII bytes: the brand JOB followed by a 64-bit snowflake in base62 … left-padded with 0 to 11 characters"`}
	ruleMinter       = Rule{"minter-lease", `canon §3: "Two live minters never share a worker id: the minter leases it from the server under the braced deployment base (SET {emq}:minter:<w> <owner> NX PX <ttl>)"`}
	ruleMintOrder    = Rule{"mint-order", `canon §3: "Within one minter ids are strictly increasing … byte order is snowflake order is mint order, and score-0 zsets pop oldest first"`}
	ruleGrammar      = Rule{"grammar", `canon §2: "The parse is total: every key the bus ever writes parses under this table … all keys of one queue answer one cluster slot (CRC16/XMODEM mod 16384)"`}
	ruleKeyBuilder   = Rule{"key-builder", `canon §2/§3: "Anything else is refused by the key builder (EMQKEY) before a byte reaches the server"; "Another brand (ORD…) is EMQKIND; a wrong length or a character outside the alphabet is EMQKEY. Both are refused before a byte reaches the server"`}
	ruleEnqueue      = Rule{"enqueue", `canon §4 enqueue: "if the row exists: reply 0, change nothing (idempotent by id). Else write the three-field row; delay_ms = 0 → pending with score 0, else scheduled at TIME+delay; arm wake"`}
	ruleRow          = Rule{"row", `canon §2: "emq:{q}:job:<id> | hash | the job row: exactly state, attempts, payload"`}
	ruleClaim        = Rule{"claim", `canon §4 claim: "if meta.paused: empty reply. ZPOPMIN pending; empty → empty reply. HINCRBY attempts 1, state active, ZADD active at TIME+lease_ms; re-arm wake if work remains; reply {id, payload, attempts}"`}
	ruleNoScript     = Rule{"noscript", `canon §5.3: "on NOSCRIPT the client loads the exact source (SCRIPT LOAD), checks that the returned SHA1 is the expected one, and retries once. The retry cannot double an effect"`}
	ruleFenced       = Rule{"fenced", `canon §4: "every transition out of active (and extend, checkpoint) names (id, token) and is refused with EMQSTALE unless the row exists, is active, its attempts equals the token, and its lease has not passed on the server's clock … A refused transition changes nothing"`}
	ruleExtend       = Rule{"extend", `canon §4 extend: "fenced; move the lease deadline to TIME+lease_ms"`}
	ruleComplete     = Rule{"complete", `canon §4 complete: "fenced; removes row, active entry, checkpoint, last error, lane bookkeeping"`}
	ruleRetry        = Rule{"retry", `canon §4 retry: "fenced; attempts ≥ max_attempts → as fail; else back to pending (delay 0) or scheduled, last error kept, arm wake; reply retried or dead"`}
	rulePromote      = Rule{"promote", `canon §4 promote: "ids in scheduled due ≤ TIME → pending (or their lane); reply the count"`}
	ruleFail         = Rule{"fail", `canon §4 fail: "fenced; state dead, ZADD dead at TIME, last error kept"`}
	ruleMorgue       = Rule{"morgue", `canon §4 revive, purge: "the morgue: a dead job back to pending (attempts intact), or gone for good"`}
	ruleReap         = Rule{"reap", `canon §4 reap: "ids in active whose lease ≤ TIME: attempts ≥ max_attempts → dead (error lease expired), else back to pending or their lane; attempts unchanged"`}
	ruleCheckpoint   = Rule{"checkpoint", `contracts/PROTOCOL.md A3: "claim and lane_claim reply … the checkpoint bytes of the earlier attempt … The checkpoint survives retry and reap, and is removed by complete and purge"`}
	ruleTokens       = Rule{"tokens", `canon §4: "attempts is incremented only by a claim, and it is the fencing token … attempts never decreases, so no token is ever issued twice for one id"`}
	ruleLanes        = Rule{"lanes", `canon §4 Lanes: "The ring holds exactly the serviceable lanes — those with pending ids, not paused and below their ceiling — each once. A lane claim takes the lane at the ring's head, moves it to the tail (rotation), pops its oldest id"`}
	ruleStarve       = Rule{"starvation", `canon §4 Lanes: "Starvation is gated: with N serviceable lanes, a lane with work waits at most N−1 lane claims"`}
	ruleCeiling      = Rule{"ceiling", `contracts/PROTOCOL.md A7: "n ≥ 1 limits the lane's active count to n … A lane at its ceiling leaves the ring and rejoins on the complete, retry, fail or reap that brings it below"`}
	ruleQueuePause   = Rule{"queue-pause", `contracts/PROTOCOL.md A6: "meta.paused = 1 makes claim and lane_claim answer empty, inside the claim script (atomic with it). Lane state is kept; the ring is not touched"`}
	ruleWake         = Rule{"wake", `canon §4 Wake: "enqueue, retry, reap and promote arm the wake (push one token if the list is empty); claim re-arms it while work remains"; A10: "the wake list holds at most one element"`}
	rulePark         = Rule{"park", `canon §1.6: "An idle consumer blocks on its queue's wake key and issues no other command while idle"; A10: "Parking is BLPOP emq:{q}:wake <timeout> on a connection used for nothing else"`}
	ruleHello        = Rule{"hello", `contracts/PROTOCOL.md Part B hello: "connect, HELLO 2, server check (A12), fence … replies … bundle (echomq:2.0.0), digest"`}
	ruleServer       = Rule{"server", `canon §5.1 / A12: "HELLO 2 must answer server = valkey, version ≥ 8.1.0, mode = standalone; … anything else is refused with EMQSERVER, before the fence runs and before any other command"`}
	ruleVersion      = Rule{"version", `canon §5.2: "fence with the bundle version echomq:2.0.0 and the bundle digest … Absent → installed; equal → ok; different → EMQVERSION"`}
	ruleReconnect    = Rule{"reconnect", `canon §5: "At connect and every reconnect, before anything else" — PROTOCOL.md reconnect: "drop every connection, open new ones; HELLO 2 and the fence run again first"`}
	ruleFence        = Rule{"wire-fence-first", `canon §1.2 / §5: "A session runs the handshake at connect and at every reconnect before any other command": HELLO 2, then the fence script, first on every connection`}
	ruleEvalsha      = Rule{"wire-evalsha", `canon §1.1 / §7: "every transition is an EVALSHA of a bundle SHA1 (never EVAL of edited source, never a loose command sequence)"`}
	ruleA4           = Rule{"wire-commands", `contracts/PROTOCOL.md A4: besides EVALSHA a port may send only the handshake, the minter lease, the blocking pop on a wake key and read-only commands on grammar keys`}
	ruleParse        = Rule{"wire-keys-parse", `canon §2 / §7: "every key any command or script touches parses under §2 and every key of one queue answers one slot"`}
	ruleDeclared     = Rule{"wire-declared-keys", `canon §1.3: "A script touches only keys passed in KEYS[], or keys derived inside the script from a declared key by the grammar … No script ever builds an operand key from an ARGV value"`}
	ruleArgvIDKey    = Rule{"wire-argv-id", `contracts/PROTOCOL.md A5: "A fenced or idempotent op passes the row key emq:{q}:job:<id> in KEYS[] and the id in ARGV"`}
	rulePortProtocol = Rule{"port-protocol", `contracts/PROTOCOL.md Part B: "A port that misses [the deadline], exits, prints a line that is not a valid reply, or answers out of sequence fails the contract in progress"`}
	ruleRefusal      = Rule{"refusal-clean", `canon §1.2: "A mismatch is a typed refusal, never a degraded session"`}
	ruleArgRanges    = Rule{"arg-ranges", `contracts/PROTOCOL.md A16: "tokens 1..1e14; anything else is EMQARG and changes nothing"`}
	ruleHelloOp      = Rule{"hello-op", `contracts/PROTOCOL.md: "hello: connect, HELLO 2, server check (A12), fence"`}
	ruleClose        = Rule{"close", `contracts/PROTOCOL.md Part B: "After close the port exits with status 0"`}
	// WireLawRule is the wire law as the canon states it: the RULE of a wire-law failure.
	WireLawRule = Rule{"wire-law", `canon §7: "The wire law holds in every contract … A port that breaks the wire law fails the contract in which it did so"`}
)

// wireRules are the wire law's own rules: checkWireLaw evaluates them in every clause.
var wireRules = []Rule{ruleFence, ruleEvalsha, ruleA4, ruleParse, ruleDeclared, ruleArgvIDKey}

// Rules lists every rule the contracts quote, sorted by id: the core ones here and those each
// area declares beside its checks (rules_*.go).
func Rules() []Rule {
	rs := slices.Concat(coreRules, rulesTime, rulesIdentity, rulesRefusals, rulesLifecycle, rulesLanes, rulesWake, rulesWalk, rulesDomains, rulesConversation, rulesBatch, rulesEdges)
	slices.SortFunc(rs, func(a, b Rule) int { return cmp.Compare(a.ID, b.ID) })
	return rs
}

// coreRules are the rules declared in this file.
var coreRules = []Rule{WireLawRule, ruleClock, ruleIDs, ruleMinter, ruleMintOrder, ruleGrammar, ruleKeyBuilder, ruleEnqueue, ruleRow, ruleClaim, ruleNoScript, ruleFenced, ruleExtend, ruleComplete, ruleRetry, rulePromote, ruleFail, ruleMorgue, ruleReap, ruleCheckpoint, ruleTokens, ruleLanes, ruleStarve, ruleCeiling, ruleQueuePause, ruleWake, rulePark, ruleHello, ruleServer, ruleVersion, ruleReconnect, ruleFence, ruleEvalsha, ruleA4, ruleParse, ruleDeclared, ruleArgvIDKey, rulePortProtocol, ruleRefusal, ruleArgRanges, ruleHelloOp, ruleClose}

// sessionRules are the port protocol's own duties (start, hello, answer in order, close), which
// every clause evaluates. The kit's fake ports break them (TestMisbehavingPortFailsCleanly), not
// the mutant catalogue: a mutant of the reference's bus cannot crash its process.
var sessionRules = []Rule{rulePortProtocol, ruleHelloOp, ruleClose}

// WireRules are the wire law's rules, which every clause evaluates.
func WireRules() []Rule { return append([]Rule{WireLawRule}, wireRules...) }

// SessionRules are the port protocol's session duties, which every clause evaluates.
func SessionRules() []Rule { return slices.Clone(sessionRules) }
