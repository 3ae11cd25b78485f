package rules

// The batch ops' rules (contracts/PROTOCOL.md A17, capability "batch"), checked by the clauses
// of the contracts that own enqueue, claim and complete (batch.go).

var rulesBatch = []Rule{BatchEnqueue, BatchClaim, BatchComplete, BatchStale}

var (
	BatchEnqueue  = Rule{"A17-enqueue-batch", `contracts/PROTOCOL.md A17: "each job in a batch gets exactly its single-job script's effect (idempotent enqueue …)" — every row as enqueue writes it, in order, a duplicate (already there, or earlier in the batch) created: false and unchanged, the wake armed once`}
	BatchClaim    = Rule{"A17-claim-batch", `contracts/PROTOCOL.md A17: "each job in a batch gets exactly its single-job script's effect (… claim with its own token and lease …)" — the n oldest pending jobs, oldest first, each with token attempts+1 and a lease at TIME + lease_ms; empty when the queue is paused or empty`}
	BatchComplete = Rule{"A17-complete-batch", `contracts/PROTOCOL.md A17: "each job in a batch gets exactly its single-job script's effect (… complete fenced on its own (id, token) …)" — every settled job retired everywhere, as complete retires it`}
	BatchStale    = Rule{"A17-stale-pair", `contracts/PROTOCOL.md A17: "a stale pair is refused and changes nothing while the others settle"`}
)
