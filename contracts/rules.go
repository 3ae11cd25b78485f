package contracts

// The canon's clauses the contracts quote in their failure messages.
const (
	ruleClock      = `canon §1.4: "The server's clock owns time. Leases, due times and death times come from TIME inside the script. Clients send durations (lease_ms, delay_ms), never instants"`
	ruleIDs        = `canon §3: "A JOB id is 14 ASCII bytes: the brand JOB followed by a 64-bit snowflake in base62 … left-padded with 0 to 11 characters"`
	ruleMinter     = `canon §3: "Two live minters never share a worker id: the minter leases it from the server under the braced deployment base (SET {emq}:minter:<w> <owner> NX PX <ttl>)"`
	ruleMintOrder  = `canon §3: "Within one minter ids are strictly increasing … byte order is snowflake order is mint order, and score-0 zsets pop oldest first"`
	ruleGrammar    = `canon §2: "The parse is total: every key the bus ever writes parses under this table … all keys of one queue answer one cluster slot (CRC16/XMODEM mod 16384)"`
	ruleKeyBuilder = `canon §2/§3: "Anything else is refused by the key builder (EMQKEY) before a byte reaches the server"; "Another brand (ORD…) is EMQKIND; a wrong length or a character outside the alphabet is EMQKEY. Both are refused before a byte reaches the server"`
	ruleEnqueue    = `canon §4 enqueue: "if the row exists: reply 0, change nothing (idempotent by id). Else write the three-field row; delay_ms = 0 → pending with score 0, else scheduled at TIME+delay; arm wake"`
	ruleRow        = `canon §2: "emq:{q}:job:<id> | hash | the job row: exactly state, attempts, payload"`
	ruleClaim      = `canon §4 claim: "if meta.paused: empty reply. ZPOPMIN pending; empty → empty reply. HINCRBY attempts 1, state active, ZADD active at TIME+lease_ms; re-arm wake if work remains; reply {id, payload, attempts}"`
	ruleNoScript   = `canon §5.3: "on NOSCRIPT the client loads the exact source (SCRIPT LOAD), checks that the returned SHA1 is the expected one, and retries once. The retry cannot double an effect"`
	ruleFenced     = `canon §4: "every transition out of active (and extend, checkpoint) names (id, token) and is refused with EMQSTALE unless the row exists, is active, its attempts equals the token, and its lease has not passed on the server's clock … A refused transition changes nothing"`
	ruleExtend     = `canon §4 extend: "fenced; move the lease deadline to TIME+lease_ms"`
	ruleComplete   = `canon §4 complete: "fenced; removes row, active entry, checkpoint, last error, lane bookkeeping"`
	ruleRetry      = `canon §4 retry: "fenced; attempts ≥ max_attempts → as fail; else back to pending (delay 0) or scheduled, last error kept, arm wake; reply retried or dead"`
	rulePromote    = `canon §4 promote: "ids in scheduled due ≤ TIME → pending (or their lane); reply the count"`
	ruleFail       = `canon §4 fail: "fenced; state dead, ZADD dead at TIME, last error kept"`
	ruleMorgue     = `canon §4 revive, purge: "the morgue: a dead job back to pending (attempts intact), or gone for good"`
	ruleReap       = `canon §4 reap: "ids in active whose lease ≤ TIME: attempts ≥ max_attempts → dead (error lease expired), else back to pending or their lane; attempts unchanged"`
	ruleCheckpoint = `contracts/PROTOCOL.md A3: "claim and lane_claim reply … the checkpoint bytes of the earlier attempt … The checkpoint survives retry and reap, and is removed by complete and purge"`
	ruleTokens     = `canon §4: "attempts is incremented only by a claim, and it is the fencing token … attempts never decreases, so no token is ever issued twice for one id"`
	ruleLanes      = `canon §4 Lanes: "The ring holds exactly the serviceable lanes — those with pending ids, not paused and below their ceiling — each once. A lane claim takes the lane at the ring's head, moves it to the tail (rotation), pops its oldest id"`
	ruleStarve     = `canon §4 Lanes: "Starvation is gated: with N serviceable lanes, a lane with work waits at most N−1 lane claims"`
	ruleCeiling    = `contracts/PROTOCOL.md A7: "n ≥ 1 limits the lane's active count to n … A lane at its ceiling leaves the ring and rejoins on the complete, retry, fail or reap that brings it below"`
	ruleQueuePause = `contracts/PROTOCOL.md A6: "meta.paused = 1 makes claim and lane_claim answer empty, inside the claim script (atomic with it). Lane state is kept; the ring is not touched"`
	ruleWake       = `canon §4 Wake: "enqueue, retry, reap and promote arm the wake (push one token if the list is empty); claim re-arms it while work remains"; A10: "the wake list holds at most one element"`
	rulePark       = `canon §1.6: "An idle consumer blocks on its queue's wake key and issues no other command while idle"; A10: "Parking is BLPOP emq:{q}:wake <timeout> on a connection used for nothing else"`
	ruleHello      = `contracts/PROTOCOL.md Part B hello: "connect, HELLO 2, server check (A12), fence … replies … bundle (echomq:2.0.0), digest"`
	ruleServer     = `canon §5.1 / A12: "HELLO 2 must answer server = valkey, version ≥ 8.1.0, mode = standalone; … anything else is refused with EMQSERVER, before the fence runs and before any other command"`
	ruleVersion    = `canon §5.2: "fence with the bundle version echomq:2.0.0 and the bundle digest … Absent → installed; equal → ok; different → EMQVERSION"`
	ruleReconnect  = `canon §5: "At connect and every reconnect, before anything else" — PROTOCOL.md reconnect: "drop every connection, open new ones; HELLO 2 and the fence run again first"`
)
