package protocol

import (
	"strconv"
	"strings"
)

// The canon's bounds (contracts/PROTOCOL.md A16, the op table's field domains, the lua headers).
// Every runtime of the kit reads them from here.
const (
	// MaxMS is the largest duration and token A16 admits: 1e14 (lease_ms 1..1e14, delay_ms
	// 0..1e14, tokens 1..1e14).
	MaxMS = 100_000_000_000_000
	// MaxLimit bounds a scan (reap, promote, morgue): limit 1..10000.
	MaxLimit = 10_000
	// MaxAttempts bounds max_attempts: 1..1e9.
	MaxAttempts = 1_000_000_000
	// MaxCeiling bounds a lane ceiling: 0..1e9 (0 removes it).
	MaxCeiling = 1_000_000_000
	// MaxBatch bounds the jobs of one batched script call (A17): 1..1000.
	MaxBatch = 1_000
	// MaxName is the longest queue or lane name in bytes (canon §2.1).
	MaxName = 64
	// MaxMint bounds one mint op: n ≤ 100000 and n × parallel ≤ 100000, so its reply fits in
	// memory; MaxParallel bounds its callers.
	MaxMint     = 100_000
	MaxParallel = 1_024
	// MaxConsumers bounds the park op's consumers; MaxParkMS its park_ms and timeout_ms (one hour:
	// the op is a test aid, and a longer wait is a stuck clause).
	MaxConsumers = 256
	MaxParkMS    = 3_600_000
	// MinMinterTTL and MaxMinterTTL bound hello's minter_ttl_ms: the lease renews every ttl/3.
	MinMinterTTL = 3
	MaxMinterTTL = 1_000_000_000
	// MinConsumerLease is the shortest lease a consumer takes (the park op's lease_ms): it renews
	// its jobs' leases at a third of it, in whole milliseconds.
	MinConsumerLease = 3
	// MaxParkJobs bounds the park op's jobs.
	MaxParkJobs = 100_000
	// MaxClockScale bounds the clock op's scale.
	MaxClockScale = 1_000_000
)

// Kind is the domain of a request field (contracts/PROTOCOL.md Part B, "Fields and their
// domains"). A value outside it is refused with the error its kind names.
type Kind int

const (
	// KindInt is a JSON number with an integral value within [Min, Max]; a string, a fraction, a
	// boolean or null is the wrong type (EMQARG), and so is any value out of range (EMQARG).
	KindInt Kind = iota + 1
	// KindString is any JSON string, the empty one included.
	KindString
	// KindAddr is a non-empty host:port string.
	KindAddr
	// KindBool is true or false.
	KindBool
	// KindB64 is standard base64 with padding; the empty string is zero bytes. Anything else
	// is EMQARG.
	KindB64
	// KindName is a queue or lane name (canon §2.1): a string, refused EMQKEY when it is not
	// 1–64 bytes of a–z 0–9 _ . - (the empty string included).
	KindName
	// KindJobID is a JOB id (canon §3): a string; a wrong length or alphabet is EMQKEY, another
	// brand EMQKIND (the empty string is EMQKEY).
	KindJobID
	// KindKeyType is one of KeyTypes; any other string is EMQKEY (canon §2.4).
	KindKeyType
	// KindList is a JSON array of Min..Max objects, each held to Items.
	KindList
)

func (k Kind) String() string {
	switch k {
	case KindInt:
		return "integer"
	case KindString:
		return "string"
	case KindAddr:
		return "host:port"
	case KindBool:
		return "boolean"
	case KindB64:
		return "base64"
	case KindName:
		return "name"
	case KindJobID:
		return "job id"
	case KindKeyType:
		return "key type"
	case KindList:
		return "list"
	}
	return "unknown"
}

// KeyTypes are the key types the key op builds (canon §2.4).
var KeyTypes = []string{"pending", "active", "scheduled", "dead", "errors", "ckpt", "meta", "wake", "ring", "lanes", "laneof", "job", "lane"}

// Field is one request field of one op and its domain.
type Field struct {
	Name string
	Kind Kind
	// Required: absent (or null) is EMQARG. When, if set, makes the field required only when
	// another field has a value ("type=job").
	Required bool
	When     string
	// Min and Max bound a KindInt field.
	Min, Max int64
	// Default is what an absent optional field means, in the op table's words ("" when the
	// absence has a meaning of its own, such as "the port mints one").
	Default string
	// Absent says what an absent optional field does when it is not a plain default value.
	Absent string
	// Zero, if set, says what the value 0 means for a field whose range starts above it.
	Zero string
	// Items are the fields of each object of a KindList field (Min..Max of them).
	Items []Field
	// Cap, if set, is the capability a port declares for the field to bind it (a test aid's
	// field): a port without it ignores the field, whatever its value (PROTOCOL.md Part B, "What
	// a port does not offer").
	Cap string
}

// Has tells whether f has a documented default value (an integer Default).
func (f Field) Has() bool { return f.Default != "" }

func name(n string) Field { return Field{Name: n, Kind: KindName, Required: true} }
func jobID() Field        { return Field{Name: "id", Kind: KindJobID, Required: true} }
func token() Field        { return Field{Name: "token", Kind: KindInt, Required: true, Min: 1, Max: MaxMS} }
func lease() Field        { return Field{Name: "lease_ms", Kind: KindInt, Required: true, Min: 1, Max: MaxMS} }
func b64(n string) Field  { return Field{Name: n, Kind: KindB64, Required: true} }
func text(n string) Field { return Field{Name: n, Kind: KindString, Required: true} }
func limit(def string) Field {
	return Field{Name: "limit", Kind: KindInt, Min: 1, Max: MaxLimit, Default: def}
}
func attempts() Field {
	return Field{Name: "max_attempts", Kind: KindInt, Required: true, Min: 1, Max: MaxAttempts}
}
func ints(n string, lo, hi int64) Field {
	return Field{Name: n, Kind: KindInt, Required: true, Min: lo, Max: hi}
}

// fence are the fields that name a claimed job: queue, id, token.
func fence(more ...Field) []Field { return append([]Field{name("queue"), jobID(), token()}, more...) }

// Fields is every op's request fields and their domains, in the op table's order. It mirrors
// contracts/PROTOCOL.md Part B ("Fields and their domains"): TestFieldsMatchProtocol holds the
// two together, and the schema's required lists to both.
var Fields = map[string][]Field{
	"hello": {
		{Name: "valkey", Kind: KindAddr, Required: true},
		{Name: "minter_ttl_ms", Kind: KindInt, Min: MinMinterTTL, Max: MaxMinterTTL, Absent: "the port's own lease time", Cap: CapMinterTTL},
		{Name: "cluster", Kind: KindBool, Default: "false"},
	},
	"mint": {
		ints("n", 0, MaxMint),
		{Name: "parallel", Kind: KindInt, Min: 1, Max: MaxParallel, Default: "1"},
	},
	"key": {
		name("queue"),
		{Name: "type", Kind: KindKeyType, Required: true},
		{Name: "id", Kind: KindJobID, When: "type=job"},
		{Name: "lane", Kind: KindName, When: "type=lane"},
	},
	"slot":         {text("key")},
	"enqueue":      {name("queue"), b64("payload_b64"), {Name: "id", Kind: KindJobID, Absent: "the port mints one"}, {Name: "delay_ms", Kind: KindInt, Min: 0, Max: MaxMS, Default: "0"}, {Name: "lane", Kind: KindName, Absent: "the plain queue"}},
	"claim":        {name("queue"), lease()},
	"lane_claim":   {name("queue"), lease()},
	"extend":       fence(lease()),
	"complete":     fence(),
	"retry":        fence(attempts(), ints("delay_ms", 0, MaxMS), text("error")),
	"fail":         fence(text("error")),
	"checkpoint":   fence(b64("data_b64")),
	"reap":         {name("queue"), attempts(), limit("1000")},
	"promote":      {name("queue"), limit("1000")},
	"morgue":       {name("queue"), limit("100")},
	"revive":       {name("queue"), jobID()},
	"purge":        {name("queue"), jobID()},
	"pause":        {name("queue")},
	"resume":       {name("queue")},
	"lane_pause":   {name("queue"), name("lane")},
	"lane_resume":  {name("queue"), name("lane")},
	"lane_ceiling": {name("queue"), name("lane"), ints("ceiling", 0, MaxCeiling)},
	"park": {
		name("queue"), ints("consumers", 1, MaxConsumers), ints("jobs", 0, MaxParkJobs), ints("lease_ms", MinConsumerLease, MaxMS),
		ints("park_ms", 1, MaxParkMS), ints("timeout_ms", 1, MaxParkMS),
	},
	"reconnect": nil,
	"close":     nil,
	"clock": {
		{Name: "set_ms", Kind: KindInt, Min: EpochMS, Max: MaxClockMS, Default: "0", Zero: "the real clock"},
		{Name: "scale", Kind: KindInt, Min: 1, Max: MaxClockScale, Default: "1"},
	},
	"enqueue_batch": {name("queue"), {Name: "jobs", Kind: KindList, Required: true, Min: 1, Max: MaxBatch, Items: []Field{
		b64("payload_b64"), {Name: "id", Kind: KindJobID, Absent: "the port mints one"}, {Name: "delay_ms", Kind: KindInt, Min: 0, Max: MaxMS, Default: "0"},
	}}},
	"claim_batch": {name("queue"), lease(), ints("n", 1, MaxBatch)},
	"complete_batch": {name("queue"), {Name: "jobs", Kind: KindList, Required: true, Min: 1, Max: MaxBatch, Items: []Field{
		jobID(), token(),
	}}},
}

// EpochMS is the snowflake epoch (canon §3.1, 2024-01-01T00:00:00Z) in Unix milliseconds, and
// MaxClockMS the last Unix millisecond a snowflake holds (the epoch plus 2⁴²−1 ms).
const (
	EpochMS    = 1_704_067_200_000
	MaxClockMS = EpochMS + 1<<42 - 1
)

// Row renders f as its row of the table in contracts/PROTOCOL.md Part B, "Fields and their
// domains": | op | field | domain | when absent |.
func (f Field) Row(op string) string {
	return "| `" + op + "` | `" + f.Name + "` | " + f.domain() + " | " + f.absent() + " |"
}

func (f Field) domain() string {
	switch f.Kind {
	case KindList:
		return "list of " + num(f.Min) + ".." + num(f.Max) + " objects (below)"
	case KindInt:
		d := "integer " + num(f.Min) + ".." + num(f.Max)
		if f.Zero != "" {
			d = "0 (" + f.Zero + ") or integer " + num(f.Min) + ".." + num(f.Max)
		}
		if f.Cap != "" {
			d += ", for a port declaring `" + f.Cap + "` (others ignore the field, whatever its value)"
		}
		return d
	case KindName:
		return "name (canon §2.1)"
	case KindJobID:
		return "JOB id (canon §3)"
	case KindKeyType:
		return "key type (canon §2.4)"
	case KindB64:
		return "standard padded base64 (empty: zero bytes)"
	case KindString:
		return "string (empty allowed)"
	case KindAddr:
		return "host:port (non-empty)"
	case KindBool:
		return "boolean"
	}
	return "?"
}

func (f Field) absent() string {
	switch {
	case f.Required:
		return "EMQARG"
	case f.When != "":
		k, v, _ := strings.Cut(f.When, "=")
		return "EMQARG when `" + k + "` is `" + v + "`"
	case f.Default != "":
		return "default `" + f.Default + "`"
	}
	return f.Absent
}

// num writes n as PROTOCOL.md does: 1e9 and 1e14 in short, other numbers in full.
func num(n int64) string {
	switch n {
	case 1_000_000_000:
		return "1e9"
	case MaxMS:
		return "1e14"
	}
	return strconv.FormatInt(n, 10)
}

// FieldRows renders every op's fields, in the order of Ops; a list's item fields follow it as
// "jobs[].id".
func FieldRows() []string {
	var rows []string
	for _, op := range Ops {
		for _, f := range Fields[op] {
			rows = append(rows, f.Row(op))
			for _, it := range f.Items {
				it.Name = f.Name + "[]." + it.Name
				rows = append(rows, it.Row(op))
			}
		}
	}
	return rows
}
