// Package rules holds the rules the contracts quote: each an id and the words of the document
// that states it (the canon, contracts/PROTOCOL.md or a script's header), and the lists a run
// evaluates. A clause records every rule it checks and a failure names one; TRACEABILITY.md maps
// each rule to its clauses and mutants. The quotes are data, read by the clauses, the
// traceability and the quote check (TestRuleQuotesAreInTheDocuments), so they live apart from
// the checks that use them.
package rules

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
	Clock        = Rule{"clock", `canon §1.4 The server's clock owns time: "Lease deadlines, due times and death times are computed inside scripts from TIME (milliseconds = sec*1000 + floor(usec/1000)). Clients only ever send durations (lease_ms, delay_ms), never instants"`}
	IDs          = Rule{"id-format", `canon §3.1: "A JOB id is exactly 14 ASCII bytes: a three-letter brand followed by an unsigned 64-bit snowflake written in base62 with 11 digits, left-padded with 0"; §3.2: "The bus issues one brand, JOB"`}
	Minter       = Rule{"minter-lease", `canon §3.4: "Ids come from a minter that holds a worker id, and two live minters never hold the same one … Lease key and acquire: SET {emq}:minter:<w> <owner> NX PX <ttl>"`}
	MintOrder    = Rule{"mint-order", `canon §3.4: "within one minter ids strictly increase"; §3.1: "Byte order = snowflake order = mint order, which is why a zset whose scores are all 0 pops the oldest job first"`}
	Grammar      = Rule{"grammar", `canon §2.2 / §2.3: "The grammar is closed and its parse is total: every string either parses as exactly one row of this table or is not an EchoMQ key … A key the bus wrote that does not parse is a defect"; "all keys of one queue fall in one cluster slot: CRC16/XMODEM of the tag, modulo 16384"`}
	KeyBuilder   = Rule{"key-builder", `canon §2.1: "The key builder refuses any other name with EMQKEY, before a byte reaches the server"; §3.5: "Another brand is EMQKIND; a wrong length, a character outside the alphabet, 11 digits above the largest snowflake or a brand that is not three capitals is EMQKEY (§2.4). Both are raised before a byte reaches the server"; §2.4: "any other type is EMQKEY"`}
	Enqueue      = Rule{"enqueue", `canon §4.2 enqueue: "if the row exists, changes nothing (idempotent by id). Otherwise writes the three-field row with attempts 0: with delay_ms 0 the id goes to pending (score 0), else to scheduled at TIME + delay; arms the wake"; reply "1 new, 0 duplicate"`}
	Row          = Rule{"row", `canon §2.2: "emq:{q}:job:<id> | hash | the job row, with exactly three fields: state, attempts, payload"`}
	Claim        = Rule{"claim", `canon §4.2 claim: "empty if the queue is paused or nothing is pending; otherwise pops the oldest pending id, adds 1 to attempts, sets active, puts the id in active at TIME + lease_ms; re-arms the wake while work remains"; reply "{id, payload, attempts, checkpoint or nil} (A3) or empty"`}
	NoScript     = Rule{"noscript", `canon §5.3: "On a NOSCRIPT error (the server's script cache was flushed, or never had it) the client loads the exact source with SCRIPT LOAD, checks that the SHA1 the server answers is the expected one, and retries the EVALSHA once. The retry cannot apply an effect twice, because a script that answered NOSCRIPT never ran"`}
	Fenced       = Rule{"fenced", `canon §4.1: "every op on a claimed job (complete, retry, fail, extend, checkpoint) names (id, token). Such an op is refused with EMQSTALE unless all of these hold at once, on the server's clock: 1. the row exists, 2. its state is active, 3. its attempts equals the token, 4. its lease has not passed … A refused op changes nothing, byte for byte"`}
	Extend       = Rule{"extend", `canon §4.2 extend: "fenced; moves the deadline to TIME + lease_ms"`}
	Complete     = Rule{"complete", `canon §4.2 complete: "fenced; deletes the row, the active entry, the checkpoint, the last error and the lane bookkeeping (laneof, the lane's active count)"`}
	Retry        = Rule{"retry", `canon §4.2 retry: "fenced; if attempts ≥ max_attempts exactly as fail (A8); otherwise back to pending (delay 0) or scheduled at TIME + delay, the error kept as the last error, wake armed"; reply "retried or dead"`}
	Promote      = Rule{"promote", `canon §4.2 promote: "every id in scheduled due ≤ TIME (up to limit) goes to pending or its lane"; reply "the count"`}
	Fail         = Rule{"fail", `canon §4.2 fail: "fenced; state dead, into dead at TIME, the error kept as the last error"`}
	Morgue       = Rule{"morgue", `canon §4.2 revive, purge: "a dead job back to pending or its lane, attempts intact"; "a dead job gone for good"`}
	Reap         = Rule{"reap", `canon §4.2 reap: "every id in active whose deadline ≤ TIME (up to limit): at max_attempts or more it dies with the error lease expired, otherwise it returns to pending or its lane; attempts unchanged"`}
	Checkpoint   = Rule{"checkpoint", `contracts/PROTOCOL.md A3: "claim and lane_claim reply … the checkpoint bytes of the earlier attempt … The checkpoint survives retry and reap, and is removed by complete and purge"`}
	Tokens       = Rule{"tokens", `canon §4.1: "attempts starts at 0, goes up by one on every claim and on nothing else, and never goes down — not after a reap, not after a revive. It is the fencing token: a claim hands it out"`}
	Lanes        = Rule{"lanes", `canon §4.4: "The ring (emq:{q}:ring) holds exactly the serviceable lanes — a lane is serviceable when it has pending ids, is not paused, and its active count is below its ceiling (or it has none) — each once, in rotation order. A lane claim takes the lane at the head of the ring, moves it to the tail, pops that lane's oldest id"`}
	Starve       = Rule{"starvation", `canon §4.4: "So no lane starves: with N serviceable lanes, a lane with work waits at most N−1 lane claims"`}
	Ceiling      = Rule{"ceiling", `contracts/PROTOCOL.md A7: "n ≥ 1 limits the lane's active count to n … A lane at its ceiling leaves the ring and rejoins on the complete, retry, fail or reap that brings it below"`}
	QueuePause   = Rule{"queue-pause", `contracts/PROTOCOL.md A6: "meta.paused = 1 makes claim and lane_claim answer empty, inside the claim script (atomic with it). Lane state is kept; the ring is not touched"`}
	Wake         = Rule{"wake", `canon §4.5: "To arm it is to push one token if and only if the list is empty, inside the script … enqueue, retry (when retried) and reap/promote (when they moved a job where a claim takes it; a reap that only buried jobs in the morgue does not, unless a lane rejoined the ring) arm it; both claims re-arm it while work remains"; A10: "the wake list holds at most one element"`}
	Park         = Rule{"park", `canon §1.6: "A consumer with nothing to do blocks on its queue's wake key (BLPOP emq:{q}:wake <timeout>) and sends nothing else while idle"; A10: "Parking is BLPOP emq:{q}:wake <timeout> on a connection used for nothing else"`}
	Hello        = Rule{"hello", `contracts/PROTOCOL.md Part B hello: "connect, HELLO 2, server check (A12), fence …"; result "… bundle (echomq:2.0.0), digest …"; A1: the digest is the "hex SHA1 over the concatenation of one line name:sha1\n per script, sorted by name"`}
	Server       = Rule{"server", `canon §5.1 / A12: "HELLO 2 must answer server = valkey, version ≥ 8.1.0, mode = standalone; … anything else is refused with EMQSERVER, before the fence runs and before any other command"`}
	Version      = Rule{"version", `canon §5.2: "Run the fence script with the bundle version echomq:2.0.0 and the bundle digest … If {emq}:bundle is absent it is installed (installed); if it holds the same version and digest the answer is ok; anything else is EMQVERSION, and the session is refused"`}
	Reconnect    = Rule{"reconnect", `canon §5: "On every connection, at connect and after every reconnect, before any other command" — PROTOCOL.md reconnect: "drop every connection, open new ones; HELLO 2 and the fence run again first"`}
	Fence        = Rule{"wire-fence-first", `canon §1.2: "Every connection — the first one, every reconnect, and connections used only for parking — runs the handshake of §5 before it sends anything else": HELLO 2, then the fence script, first on every connection`}
	Evalsha      = Rule{"wire-evalsha", `canon §1.1 / §7: "every transition is an EVALSHA of a bundle SHA1, never EVAL of edited source, never a loose command sequence"`}
	A4           = Rule{"wire-commands", `contracts/PROTOCOL.md A4: besides EVALSHA a port may send only "the handshake (HELLO 2, SCRIPT LOAD after NOSCRIPT), the minter lease (SET {emq}:minter:<w> <owner> NX PX <ttl> and its renewal/release …), the blocking pop on a wake key, and read-only commands on grammar keys"; "EVAL, FUNCTION, MULTI, and any write outside a script are violations"`}
	Parse        = Rule{"wire-keys-parse", `canon §2 / §7: "every key any command or script touches parses under §2 and all keys of one queue answer one slot"`}
	Declared     = Rule{"wire-declared-keys", `canon §1.3: "A script touches a key only if the caller passed it in KEYS[], or if the script built it from the prefix of a declared key by the grammar of §2 … No script turns an ARGV value into a key"`}
	ArgvIDKey    = Rule{"wire-argv-id", `contracts/PROTOCOL.md A5: "A fenced or idempotent op passes the row key emq:{q}:job:<id> in KEYS[] and the id in ARGV"`}
	PortProtocol = Rule{"port-protocol", `contracts/PROTOCOL.md Part B: "The kit gives every request a deadline … A port that misses it, exits, prints a line that is not a valid reply, or answers out of sequence fails the contract in progress"`}
	Refusal      = Rule{"refusal-clean", `canon §1.2: "If the handshake fails, the session is refused with a typed error; it never carries on in a degraded mode"`}
	ArgRanges    = Rule{"arg-ranges", `contracts/PROTOCOL.md A16: "tokens 1..1e14; anything else is EMQARG and changes nothing"`}
	HelloOp      = Rule{"hello-op", `contracts/PROTOCOL.md Part B hello: "connect, HELLO 2, server check (A12), fence …"`}
	Close        = Rule{"close", `contracts/PROTOCOL.md Part B: "After close the port exits with status 0"`}
	// WireLaw is the wire law as the canon states it: the RULE of a wire-law failure.
	WireLaw = Rule{"wire-law", `canon §7: "The wire law holds in every contract … A port that breaks the wire law fails the contract during which it did so"`}
)

// wireRules are the wire law's own rules: checkWireLaw evaluates them in every clause.
var wireRules = []Rule{Fence, Evalsha, A4, Parse, Declared, ArgvIDKey}

// All lists every rule the contracts quote, sorted by id: the core ones here and those each
// area declares in its own file.
func All() []Rule {
	rs := slices.Concat(coreRules, rulesTime, rulesIdentity, rulesRefusals, rulesLifecycle, rulesLanes, rulesWake, rulesWalk, rulesDomains, rulesConversation, rulesBatch, rulesEdges)
	slices.SortFunc(rs, func(a, b Rule) int { return cmp.Compare(a.ID, b.ID) })
	return rs
}

// coreRules are the rules declared in this file.
var coreRules = []Rule{WireLaw, Clock, IDs, Minter, MintOrder, Grammar, KeyBuilder, Enqueue, Row, Claim, NoScript, Fenced, Extend, Complete, Retry, Promote, Fail, Morgue, Reap, Checkpoint, Tokens, Lanes, Starve, Ceiling, QueuePause, Wake, Park, Hello, Server, Version, Reconnect, Fence, Evalsha, A4, Parse, Declared, ArgvIDKey, PortProtocol, Refusal, ArgRanges, HelloOp, Close}

// sessionRules are the port protocol's own duties (start, hello, answer in order, close), which
// every clause evaluates. The kit's fake ports break them (TestMisbehavingPortFailsCleanly), not
// the mutant catalogue: a mutant of the reference's bus cannot crash its process.
var sessionRules = []Rule{PortProtocol, HelloOp, Close}

// Wire are the wire law's rules, which every clause evaluates.
func Wire() []Rule { return append([]Rule{WireLaw}, wireRules...) }

// Session are the port protocol's session duties, which every clause evaluates.
func Session() []Rule { return slices.Clone(sessionRules) }
