package mutant

import (
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/reference/bus"
)

// c02 are the mutants contract C02 must kill: a Lua edit of enqueue, and defects of the
// minter (its lease and its id layout: the reference minter hooked through the bus's minter
// seam, no script edited).
var c02 = []Spec{
	{Name: "stray-key", Contract: "C02", Rule: "wire-keys-parse", Defect: "enqueue also counts into emq:{q}:enqueued, a key outside the grammar",
		Edits: []Edit{{"enqueue", "if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nreturn 1",
			"if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nredis.call('INCR', p .. 'enqueued')\nreturn 1"}}},
	{Name: "row-extra-field", Contract: "C02", Rule: "row", Defect: "enqueue also stamps the row with the enqueue second (a fourth field, queued_s)",
		Edits: []Edit{{"enqueue", "redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', payload)",
			"redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', payload, 'queued_s', redis.call('TIME')[1])"}}},
	{Name: "minter-squats", Contract: "C02", Rule: "A9-lease-free-worker", Defect: "the minter takes a nil reply to SET … NX for success and mints under a worker id another minter holds",
		Go: faulty(minterDefects{Squat: true})},
	{Name: "minter-short-scan", Contract: "C02", Rule: "A9-lease-free-worker", Defect: "the scan for a free worker id wraps modulo 1023: with only worker id 1023 free the minter finds none",
		Go: faulty(minterDefects{ShortScan: true})},
	{Name: "minter-scan-one-short", Contract: "C02", Rule: "A9-lease-free-worker", Defect: "the scan for a free worker id stops one short of a full turn: the id just before its random start is never tried, so with only that id free the minter finds none",
		Go: faulty(minterDefects{MissLast: true})},
	{Name: "minter-never-renews", Contract: "C02", Rule: "A9-lease-renewed", Defect: "the minter never renews its lease and mints on after it lapsed",
		Go: faulty(minterDefects{NoRenew: true})},
	{Name: "minter-no-local-expiry", Contract: "C02", Rule: "lease-own-clock", Defect: "the minter keeps no clock of its own on its lease: with its renewals hanging it mints on under a lease that has run out",
		Go: faulty(minterDefects{NoLocalExpiry: true})},
	{Name: "minter-ignores-loss", Contract: "C02", Rule: "A9-lease-lost", Defect: "a refused renewal goes unnoticed: the minter mints on under a worker id another minter now holds",
		Go: faulty(minterDefects{IgnoreLoss: true})},
	{Name: "minter-keeps-lease", Contract: "C02", Rule: "A9-lease-released", Defect: "close leaves the minter lease to run out its TTL instead of releasing it",
		Go: seams(func(s *bus.Seams) { s.Minter = keepingMinter })},
	{Name: "unix-epoch", Contract: "C02", Rule: "id-epoch", Defect: "the snowflake's milliseconds count from 1970 instead of 2024-01-01",
		Go: faulty(minterDefects{UnixEpoch: true})},
	{Name: "lower-first-alphabet", Contract: "C02", Rule: "id-alphabet", Defect: "ids are base62 in the alphabet 0-9a-zA-Z (lower case before capitals), so byte order is not snowflake order",
		Go: faulty(minterDefects{LowerFirst: true})},
	{Name: "swapped-fields", Contract: "C02", Rule: "id-worker-bits", Defect: "the snowflake layout puts the sequence above the worker id (ms | seq | worker)",
		Go: faulty(minterDefects{SwapFields: true})},
	{Name: "release-any-owner", Contract: "C02", Rule: "A9-lease-released", Defect: "close deletes its worker id's lease key whoever holds it now, dropping another minter's lease",
		Go: seams(func(s *bus.Seams) { s.Hook = chain(s.Hook, releaseAny()) })},
	{Name: "relet-below-floor", Contract: "C02", Rule: "A9-reconnect-relets", Defect: "after a lost lease, the reconnect's new minter mints from the current millisecond under its lower worker id: smaller ids than the lost minter's",
		Go: faulty(minterDefects{NoFloor: true})},
	{Name: "reconnect-trusts-stale-lease", Contract: "C02", Rule: "A9-reconnect-relets", Defect: "a reconnect keeps the minter on the strength of its own record of the lease, without renewing it on the server: it mints on under a worker id another minter took meanwhile",
		Go: faulty(minterDefects{TrustLocal: true})},
	{Name: "fixed-owner-token", Contract: "C02", Rule: "A9-owner-token", Defect: "every minter leases under the same owner token (a host name, say): one session's renewal renews another's lease",
		Go: faulty(minterDefects{FixedOwner: true})},
	{Name: "slot-ignores-tag", Contract: "C02", Rule: "grammar", Defect: "the port's slot function hashes the whole key instead of its {hash tag}",
		Go: front(func(d drivers.Driver) drivers.Driver { return slotFront{d} })},
	{Name: "slot-tag-first-close", Contract: "C02", Rule: "grammar", Defect: "the port's slot function ends the hash tag at the key's first '}', not the first after the '{': `}{orders}` hashes whole (red team 54's survivor)",
		Go: front(func(d drivers.Driver) drivers.Driver { return slotFirstCloseFront{d} })},
	{Name: "unpadded-ids", Contract: "C02", Rule: "id-format", Defect: "the base62 body is not left-padded with 0 to 11 characters: today's ids are 13 bytes",
		Go: faulty(minterDefects{NoPad: true})},
	{Name: "guessed-worker", Contract: "C02", Rule: "minter-lease", Defect: "the minter picks a random worker id instead of leasing one",
		Go: faulty(minterDefects{Guess: true})},
	{Name: "enqueue-due-at-delay", Contract: "C02", Rule: "enqueue", Defect: "enqueue scores a scheduled job by delay_ms itself, not TIME + delay_ms: a job delayed by an hour is due at once (a relative delay taken for a due time)",
		Edits: []Edit{{"enqueue", "redis.call('ZADD', KEYS[3], now + delay, id)", "redis.call('ZADD', KEYS[3], delay, id)"}}},
	{Name: "minter-zero-fallback", Contract: "C02", Rule: "A9-lease-free-worker", Defect: "the minter that finds no free worker id mints under worker 0 anyway, unleased, instead of failing to start",
		Go: faulty(minterDefects{ZeroFallback: true})},
}
