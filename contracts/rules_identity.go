package contracts

// rulesIdentity are the rules of the server check, the minter and its lease, the id format and mint order (C01, C02, C05), beside their checks.
var rulesIdentity = []Rule{
	ruleServerVersion, ruleServerStandalone,
	ruleLeaseFree, ruleLeaseRenewed, ruleLeaseReleased, ruleLeaseLost, ruleLeaseRelet, ruleLeaseOwner,
	ruleIDEpoch, ruleIDWorker, ruleIDAlphabet,
	ruleClockBack, ruleSeqOverflow,
}

var (
	ruleServerVersion    = Rule{"A12-server-version", `A12 / canon §5.1: "HELLO 2 must answer … version ≥ 8.1.0 …; a server that … answers anything else is refused with EMQSERVER, before the fence runs and before any other command"`}
	ruleServerStandalone = Rule{"A12-server-standalone", `A12 / canon §5.1: "HELLO 2 must answer … mode = standalone; a server that … answers anything else is refused with EMQSERVER, before the fence runs and before any other command" (a port that has not declared cluster support)`}

	ruleLeaseFree     = Rule{"A9-lease-free-worker", `canon §3: "Two live minters never share a worker id: the minter leases it from the server … rather than guessing one"; A9: "worker ids 0–1023, leased with SET {emq}:minter:<w> <owner> NX PX <ttl>"`}
	ruleLeaseRenewed  = Rule{"A9-lease-renewed", `A9: "leased with SET {emq}:minter:<w> <owner> NX PX <ttl> (owner: a random token), renewed at ttl/3 while the minter lives"`}
	ruleLeaseReleased = Rule{"A9-lease-released", `A9: "… renewed at ttl/3 while the minter lives, released on close"`}
	ruleLeaseLost     = Rule{"A9-lease-lost", `A9: "A minter that loses its lease stops minting (a mint without a live lease answers INTERNAL …) until the session reconnects"`}

	ruleLeaseOwner = Rule{"A9-owner-token", `A9: "leased with SET {emq}:minter:<w> <owner> NX PX <ttl> (owner: a random token)" — two minters never present one token, or one's renewal (SET … IFEQ <owner>) would renew the other's lease`}
	ruleLeaseRelet = Rule{"A9-reconnect-relets", `A9: "… stops minting … until the session reconnects; a reconnect renews the lease or leases another worker id, and never mints an id smaller than one it minted before"`}

	ruleIDEpoch    = Rule{"id-epoch", `canon §3: "The snowflake is 42 bits of milliseconds since 2024-01-01T00:00:00Z, 10 bits of minter (worker) id, and 12 bits of sequence within the millisecond"`}
	ruleIDWorker   = Rule{"id-worker-bits", `canon §3: "… 10 bits of minter (worker) id …" — the worker id the minter leased`}
	ruleIDAlphabet = Rule{"id-alphabet", `canon §3: "a 64-bit snowflake in base62 (alphabet 0-9A-Za-z, in that order) left-padded with 0 to 11 characters … byte order is snowflake order is mint order"`}

	ruleClockBack   = Rule{"A11-clock-steps-back", `A11: "a minter whose clock steps back keeps minting from its last millisecond … Ids never repeat and never decrease"; canon §3: "a clock that steps back never yields a smaller id"`}
	ruleSeqOverflow = Rule{"A11-sequence-overflow", `A11: "past 4095 ids in one millisecond it waits for the next. Ids never repeat and never decrease"; canon §3: "the sequence counts within a millisecond; past 4095 the minter waits for the next millisecond"`}
)
