package rules

// rulesIdentity are the rules of the server check, the minter and its lease, the id format and mint order (C01, C02, C05).
var rulesIdentity = []Rule{
	ServerVersion, ServerStandalone,
	LeaseFree, LeaseRenewed, LeaseReleased, LeaseLost, LeaseRelet, LeaseOwner,
	IDEpoch, IDWorker, IDAlphabet,
	ClockBack, SeqOverflow,
}

var (
	ServerVersion    = Rule{"A12-server-version", `A12 / canon §5.1: "HELLO 2 must answer … version ≥ 8.1.0 …; a server that … answers anything else is refused with EMQSERVER, before the fence runs and before any other command"; canon §5.1: "A version is compared component by component as integers, major first: 8.1.10, 8.10.0, 9.0.0 and 10.0.0 are at least 8.1.0, and 8.0.99 is not; a server other than valkey is refused whatever its version"`}
	ServerStandalone = Rule{"A12-server-standalone", `A12 / canon §5.1: "HELLO 2 must answer … mode = standalone; a server that … answers anything else is refused with EMQSERVER, before the fence runs and before any other command" (a port that has not declared cluster support)`}

	LeaseFree     = Rule{"A9-lease-free-worker", `canon §3.4: "two live minters never hold the same one — a guessed worker id could collide … A minter tries the worker ids 0–1023 (the reference starts at a random offset and tries each once); NX makes the first free one its own"; A9: "worker ids 0–1023, leased with SET {emq}:minter:<w> <owner> NX PX <ttl>"`}
	LeaseRenewed  = Rule{"A9-lease-renewed", `A9: "leased with SET {emq}:minter:<w> <owner> NX PX <ttl> (owner: a random token), renewed at ttl/3 while the minter lives"`}
	LeaseReleased = Rule{"A9-lease-released", `A9: "… renewed at ttl/3 while the minter lives, released on close"`}
	LeaseLost     = Rule{"A9-lease-lost", `A9: "A minter that loses its lease mints nothing more under that worker id (canon §3.4): until it holds a lease again — after the session reconnects, or by leasing another free worker id itself — a mint answers INTERNAL"`}

	LeaseOwner = Rule{"A9-owner-token", `A9: "leased with SET {emq}:minter:<w> <owner> NX PX <ttl> (owner: a random token)" — two minters never present one token, or one's renewal (SET … IFEQ <owner>) would renew the other's lease`}
	LeaseRelet = Rule{"A9-reconnect-relets", `A9: "A reconnect renews the lease or leases another worker id, and never mints an id smaller than one it minted before"`}

	IDEpoch    = Rule{"id-epoch", `canon §3.1: "Snowflake bits, from the most significant: 42 bits of milliseconds since the epoch 2024-01-01T00:00:00Z, 10 bits of minter worker id (0–1023), 12 bits of sequence within the millisecond (0–4095)"`}
	IDWorker   = Rule{"id-worker-bits", `canon §3.1: "… 10 bits of minter worker id (0–1023) …" — the worker id the minter leased`}
	IDAlphabet = Rule{"id-alphabet", `canon §3.1: "an unsigned 64-bit snowflake written in base62 with 11 digits, left-padded with 0 … Alphabet, in this order (digit values 0 to 61): 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz … Byte order = snowflake order = mint order"`}

	ClockBack   = Rule{"A11-clock-steps-back", `A11: "a minter whose clock steps back keeps minting from its last millisecond … Ids never repeat and never decrease"; canon §3.4: "if the clock steps back, the minter keeps minting from the last millisecond it used"`}
	SeqOverflow = Rule{"A11-sequence-overflow", `A11: "past 4095 ids in one millisecond it waits for the next. Ids never repeat and never decrease"; canon §3.4: "the sequence counts within a millisecond; past 4095 the minter waits for the next millisecond"`}
)
