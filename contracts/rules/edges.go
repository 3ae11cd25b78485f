package rules

// The rules of the edges the documents state outright that no clause of the contracts' own
// themes reached (edges.go).

var rulesEdges = []Rule{KeyOpsOffline, CheckOrder, ShapeFirst, MintBound, EnqueueDefaults, LeaseOwnClock, ClockReal, ClockEnd, ParkConsumer, ParkReportsAll, ParkBounded}

var (
	KeyOpsOffline   = Rule{"key-ops-offline", `contracts/PROTOCOL.md Part B key: "the port's key builder; … no server traffic" — slot likewise`}
	CheckOrder      = Rule{"check-order", `canon §2.4: "The order of the checks: the queue name first, then the key type (the key op), then the lane name, then the id's shape (EMQKEY), then its brand (EMQKIND)"`}
	ShapeFirst      = Rule{"shape-first", `contracts/PROTOCOL.md Part B, Fields and their domains: "a request whose shape is wrong (a required field absent, null, the wrong JSON type, bad base64) is EMQARG whatever else is wrong with it"`}
	MintBound       = Rule{"mint-bound", `contracts/PROTOCOL.md Part B, Fields and their domains: "mint asks for at most 100000 ids in all: n × parallel above 100000 is EMQARG"`}
	EnqueueDefaults = Rule{"enqueue-defaults", `contracts/PROTOCOL.md Part B: enqueue "delay_ms (default 0)", "id absent: the port mints one", lane absent: the plain queue; mint "parallel (default 1)"`}
	LeaseOwnClock   = Rule{"lease-own-clock", `canon §3.4: "A failed renewal, or a lease that may have run out by the minter's own monotonic clock, means the lease is lost: the minter mints nothing more under that worker id"`}
	ClockReal       = Rule{"clock-real", `contracts/PROTOCOL.md Part B clock: "set_ms absent or 0 returns it to the real clock, whatever scale says"`}
	ClockEnd        = Rule{"clock-last-ms", `contracts/PROTOCOL.md Part B clock: "set_ms reaches 6102113711103, the last millisecond a snowflake holds (the epoch plus 2⁴²−1 ms): a mint while the minter's clock reads it answers ids of that millisecond, and once the clock reads past it a mint answers INTERNAL and mints nothing"`}
	ParkBounded     = Rule{"park-claims-bounded", `contracts/PROTOCOL.md Part B park: "A consumer holds one claim at a time, and none claims once jobs jobs were completed: over a larger backlog a park completes at most jobs + consumers − 1 jobs"`}
	ParkReportsAll  = Rule{"park-reports-all", `contracts/PROTOCOL.md Part B park: "When the park answers, its consumers have stopped: the reply lists every job they completed, and they complete none after it"`}
	ParkConsumer    = Rule{"park-consumer", `contracts/PROTOCOL.md Part B park: "jobs: consumer (the index of the consumer that completed it, 0..consumers−1), id, token, in completion order"`}
)
