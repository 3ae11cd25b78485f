package mutant

// proofsC01toC07: the statements each catalogue mutant of C01–C07 breaks (proofs.go). A mutant
// names a statement only when its defect makes the port say or do what that sentence forbids,
// not merely when both concern the same rule. Where one sentence carries several ids, they name
// its clauses in order (the trace's rules tell them apart: A11-1 the stepped-back clock, A11-2
// the sequence overflow; A12-1 what HELLO must answer, A12-2 the EMQSERVER refusal, A12-3 its
// moment; §7-2..§7-5 the wire law's fence, EVALSHA, parse and declared-key clauses).
var proofsC01toC07 = map[string][]string{
	// C01: the fence, the server check, the handshake and the session.
	"cluster-accepted":             {"A12-1", "A12-2", "§4.3-8", "§5.1-2", "§5.1-3", "§5.1-5"},
	"old-valkey-accepted":          {"A12-1", "A12-2", "§4.3-8", "§5.1-2", "§5.1-3"},
	"version-major-only":           {"A12-1", "A12-2", "§4.3-8", "§5.1-2", "§5.1-3", "§5.1-6"},
	"version-compared-as-text":     {"§5.1-6"},
	"version-major-eight":          {"§5.1-6"},
	"wrong-kind-accepted":          {"A12-1", "A12-2", "§4.3-8", "§5.1-2", "§5.1-3", "§7-7"},
	"cluster-standalone-fallback":  {"B-36"},
	"cluster-undeclared-ignored":   {"B-37"},
	"ipv6-brackets-kept":           {"B-291"},
	"connections-recycled":         {"B-292"},
	"late-reply-given-up":          {"B-303"},
	"redial-goes-on":               {"B-300"},
	"seq-past-2-53-served":         {"B-293"},
	"unreadable-line-internal":     {"B-285"},
	"ttl-undeclared-refused":       {"B-278", "B-33"},
	"batch-undeclared-answers":     {"B-278"},
	"clock-undeclared-answers":     {"B-278", "B-81"},
	"json-hello-ttl-zero":          {"B-104", "B-90", "§4.3-16"},
	"hello-bare-version":           {"B-27"},
	"digest-unsorted":              {"A1-1", "A1-2", "L-2", "L-63", "§5.2-1"},
	"hello-bare":                   {"A10-4", "§5.1-1"},
	"requests-served-newest-first": {"B-280"},
	"no-refence":                   {"B-76", "§1.2-1", "§5-1", "§7-7"},
	"second-hello-accepted":        {"B-19", "§4.3-15"},
	"refused-hello-opens-session":  {"B-288"},
	"redial-unpaced":               {"B-289"},
	"fence-refuses-own-bundle":     {"L-64", "fence.lua:errors", "fence.lua:reply", "§4.3-6", "§5.2-2"},
	"version-refusal-ignored":      {"L-4", "§1.2-2", "§5.2-2", "§5.2-3", "§7-7"},
	// Its rule's statements say what a refused session answers, not that it sends nothing
	// after the refusal: it breaks none of them.
	"refusal-reads-on": {},
	"info-banner":      {"A4-1"},
	// In cluster mode A4-6 adds the slot-map reads to A4's list, and nothing else of CLUSTER.
	"cluster-keyslot-asked": {"A4-6"},
	"minter-key-strlen":     {"A4-2"},
	"fence-late":            {"A4-3", "B-28", "§1.2-1", "§5-1", "§7-2", "§7-7"},
	// A12-3 and §5.1-4 are the check's moment: before the fence script runs.
	"server-check-after-fence": {"A12-3", "B-28", "§5.1-4"},

	// C02: the minter, ids, the row, the wire.
	"minter-short-scan":            {"A9-1", "§3.4-4"},
	"minter-scan-one-short":        {"§3.4-4", "§3.4-5"},
	"minter-squats":                {"A9-1", "§3.4-1", "§3.4-4"},
	"minter-ignores-loss":          {"A9-5", "A9-6", "§3.4-7", "§3.4-9"},
	"minter-keeps-lease":           {"A9-4", "B-77", "§3.4-10"},
	"release-any-owner":            {"§3.4-10"},
	"minter-never-renews":          {"A9-3", "§3.4-6"},
	"fixed-owner-token":            {"A9-2", "§3.4-3"},
	"reconnect-trusts-stale-lease": {"A9-7"},
	"relet-below-floor":            {"A9-8", "§3.4-14"},
	// B-295 too: with no clock on its lease it mints on whatever the wall clock says. The
	// wall-clock defect itself (a lease timed on the wall clock) needs a port libfaketime can
	// move, which no Go mutant is: contracts TestWallTimedLeaseFails edits the Node port so.
	"minter-no-local-expiry":      {"A9-5", "A9-6", "§3.4-8", "§3.4-9", "B-295"},
	"guessed-worker":              {"A9-1", "B-28", "B-41", "§3.4-1", "§3.4-2", "§7-8"},
	"batch-enqueue-ignores-delay": {"B-247"},
	"json-b64-unpadded":           {"B-17", "B-96", "B-124", "§4.3-14"},
	"json-parallel-required":      {"B-7", "B-39", "B-89", "B-111"},
	"json-batch-too-long-cut":     {"B-255", "§4.3-16"},
	"json-mint-zero-refused":      {"B-38", "B-108"},
	"json-null-as-absent":         {"B-85", "§4.3-16"},
	"slot-ignores-tag":            {"B-46", "§2.3-1", "§2.3-4", "§2.3-5", "§2.3-6", "§2.3-7"},
	"slot-tag-first-close":        {"B-46"},
	"lower-first-alphabet":        {"§3.1-2", "§3.1-6"},
	"unix-epoch":                  {"§3.1-4"},
	"unpadded-ids":                {"B-10", "§3.1-1", "§7-8"},
	"swapped-fields":              {"§3.1-4", "§3.1-5"},
	"row-extra-field":             {"L-57", "enqueue.lua:reply", "§2.2-10", "§4.1-1", "§4.2-6", "§7-8"},
	"argv-key":                    {"A5-3", "A5-4", "L-9", "L-10", "§1.3-1", "§1.3-2", "§7-5"},
	"eval-edited":                 {"A4-4", "A4-5", "§1.1-1", "§5.3-1", "§7-3"},
	"stray-key":                   {"§1.3-1", "§2.2-1", "§2.2-18", "§7-4"},
	"minter-zero-fallback":        {"A9-1", "B-30", "§3.4-5"},
	// Issue 28: the lease key outside the grammar, the slot with another CRC.
	"minter-key-padded":    {"§2.2-16", "§2.2-19"},
	"minter-key-untagged":  {"§2.2-16", "§2.3-2"},
	"slot-crc-ccitt":       {"§2.3-3"},
	"mint-brand-joc":       {"§3.2-2"},
	"enqueue-due-at-delay": {"L-56", "enqueue.lua:ARGV3", "§2.2-4"},

	// C03: duplicates.
	"batch-duplicate-created":     {"B-247"},
	"enqueue-batch-repeat-wins":   {"A17-3", "L-46", "L-58", "enqueue_batch.lua:reply", "§4.2-59"},
	"cluster-wrong-node":          {"B-35"},
	"lane-enqueue-laneof-first":   {"B-50", "L-70", "lane_enqueue.lua:reply", "§4.2-48", "§7-9"},
	"lane-enqueue-overwrites":     {"B-50", "L-70", "lane_enqueue.lua:reply", "§4.2-48", "§4.2-49", "§7-9"},
	"enqueue-duplicate-arms-wake": {"B-50", "L-57", "enqueue.lua:reply", "§4.2-5", "§7-9"},
	"enqueue-overwrites":          {"B-50", "L-57", "enqueue.lua:reply", "§4.2-5", "§4.2-8", "§7-9"},

	// C04: names, ids and the order of the checks.
	"brand-before-lane":     {"B-101", "§2.4-8"},
	"json-empty-id-mints":   {"B-95", "B-126", "§4.3-10"},
	"json-empty-lane-plain": {"B-92", "B-95", "B-130", "§2.1-2", "§2.1-3", "§2.1-4", "§2.4-2", "§2.4-6", "§4.3-10"},
	"lax-id-brand":          {"B-93", "§2.4-7", "§3.2-3", "§3.5-1", "§3.5-2", "§4.3-9", "§7-10"},
	"lax-queue-name":        {"B-16", "B-92", "§2.1-4", "§2.4-2", "§4.3-10", "§7-10"},
	"lax-key-op":            {"B-43", "§2.1-1"},
	// Issue 28: each malformed id the builder lets through reaches the server, where §2.4 and
	// §3.5 refuse it before any traffic.
	"lax-id-length":        {"§2.4-1", "§2.4-3", "§3.5-3"},
	"lax-id-alphabet":      {"§2.4-1", "§2.4-3", "§3.5-3"},
	"lax-id-above-largest": {"§2.4-1", "§2.4-4", "§3.1-3", "§3.5-3"},
	"lax-id-brand-case":    {"§2.4-1", "§2.4-4", "§3.2-1", "§3.5-3"},

	// C05: order and the clock.
	"json-clock-scale-zero":  {"B-90", "B-236", "§4.3-16"},
	"clock-step-back-minted": {"A11-1", "A11-3", "§3.4-13"},
	"sequence-borrows":       {"A11-2", "§3.4-12"},
	"sequence-carries":       {"A11-2", "§3.1-4", "§3.4-12"},
	"sequence-wraps":         {"A11-2", "A11-3", "§3.4-12"},
	"claim-newest":           {"§4.2-11", "§7-11"},
	"minter-repeats":         {"A11-3", "§3.4-11", "§7-11"},

	// C06: claim.
	// Its rule's statements are the single claims' re-arm (claim_batch's own, L-43, L-54 and
	// claim_batch.lua:reply, are traced to A17-claim-batch): it breaks none of them.
	"claim-batch-no-rearm": {},
	"claim-no-rearm":       {"A13-2", "L-28", "§4.2-12", "§4.5-3"},
	// A6-1 holds (the paused claim still answers empty); what it breaks, an empty claim
	// that reorders the ring, no statement traced to queue-pause says.
	"lane-claim-rotates-when-paused":           {},
	"claim-batch-newest-first":                 {"B-248"},
	"claim-batch-no-checkpoint":                {"B-248", "B-249", "L-54", "claim_batch.lua:reply"},
	"claim-batch-staggered-leases":             {"L-43"},
	"claim-fractional-lease":                   {"A2-2", "L-12", "§1.4-1", "§2.2-3"},
	"checkpoint-appends":                       {"§2.2-7", "§4.2-19"},
	"claim-meta-exists-paused":                 {"L-51", "claim.lua:reply", "§4.2-11", "§7-12"},
	"claim-no-increment":                       {"§4.1-4", "§4.2-11", "§7-12"},
	"payload-utf8":                             {"B-53", "§7-12"},
	"claim-checkpoint-from-third-attempt":      {"A3-1", "L-26", "§4.2-13"},
	"lane-claim-checkpoint-from-third-attempt": {"A3-1", "B-54", "L-26", "L-68", "lane_claim.lua:reply", "§4.2-52"},
	"claim-payload-formatted":                  {"B-53", "§1.5-1", "§4.2-13", "§7-12"},
	"lane-claim-payload-formatted":             {"§1.5-1", "§4.2-52"},
	"client-clock-lease":                       {"L-12", "L-13", "§1.4-1", "§1.4-2", "§4.2-11", "§7-12"},
	"json-string-lease":                        {"B-86", "B-134", "§4.3-16"},
	"noscript-reload-crlf":                     {"L-1", "§4.2-1", "§5.3-2", "§7-12"},
	"enqueue-retried-on-error":                 {"§5.3-4"},
	"claim-row-lease-field":                    {"§2.2-10", "§4.1-1"},
	"lane-claim-row-lane-field":                {"§2.2-10", "§4.1-1"},

	// C07: the token fence and the argument ranges.
	"retry-delay-positive":           {"A16-1", "B-162", "L-17", "L-85", "retry.lua:ARGV4"},
	"morgue-limit-unbounded":         {"B-194"},
	"promote-limit-unbounded":        {"A16-2", "B-190", "L-17", "L-38", "L-77", "promote.lua:ARGV1", "§4.2-39", "§4.3-12"},
	"reap-limit-unchecked":           {"A16-2", "B-186", "L-17", "L-38", "L-81", "reap.lua:ARGV2", "§4.2-36", "§4.3-12"},
	"reap-max-attempts-unchecked":    {"A16-3", "B-184", "L-17", "L-81", "reap.lua:ARGV1", "§4.2-36", "§4.3-12"},
	"retry-max-attempts-unbounded":   {"A16-3", "B-160", "L-17", "L-85", "retry.lua:ARGV3", "§4.2-30", "§4.3-12"},
	"checkpoint-token-unbounded":     {"A16-4", "B-91", "B-178", "L-17", "L-48", "checkpoint.lua:ARGV2", "§4.2-21", "§4.3-12"},
	"complete-token-unbounded":       {"A16-4", "B-8", "B-91", "B-152", "L-17", "L-52", "complete.lua:ARGV2", "§4.2-25", "§4.3-12"},
	"complete-batch-stale-ok":        {"B-250"},
	"extend-keeps-deadline":          {"§4.2-15", "§7-13"},
	"extend-adds-to-old-deadline":    {"§4.2-15"},
	"extend-never-shortens":          {"§4.2-15"},
	"extend-replies-old-deadline":    {"L-60", "extend.lua:reply", "§4.2-16"},
	"complete-any-token":             {"B-57", "L-20", "L-90", "complete.lua:errors", "§4.1-5", "§4.1-6", "§4.2-24", "§4.3-4", "§7-13"},
	"complete-expired-lease":         {"B-57", "L-20", "complete.lua:errors", "§4.1-6", "§7-13"},
	"checkpoint-expired-lease":       {"L-20", "checkpoint.lua:errors", "§4.1-10", "§4.1-11", "§7-13"},
	"complete-lease-boundary-lt":     {"A2-1", "A2-3", "L-20", "L-21", "complete.lua:errors", "§4.1-10", "§4.1-11", "§7-13"},
	"extend-expired-lease":           {"B-56", "L-20", "extend.lua:errors", "§4.1-10", "§4.1-11", "§4.2-17", "§7-13"},
	"checkpoint-before-fence":        {"L-19", "checkpoint.lua:errors", "§4.1-12"},
	"retry-error-before-fence":       {"L-19", "retry.lua:errors", "§4.1-12"},
	"checkpoint-older-token":         {"L-20", "checkpoint.lua:errors", "§4.1-9", "§7-13"},
	"fail-newer-token":               {"B-59", "L-20", "fail.lua:errors", "§4.1-9", "§7-13"},
	"retry-any-token":                {"B-58", "L-20", "retry.lua:errors", "§4.1-9", "§4.2-29", "§7-13"},
	"json-fraction-token":            {"B-86", "B-88", "B-144", "B-152", "B-158", "B-170", "B-178", "§4.3-16"},
	"extend-mints-token":             {"§4.1-4"},
	"argv-row-id":                    {"A5-1", "L-10", "L-59", "§1.3-2"},
	"complete-batch-token-unbounded": {"B-275", "B-276", "complete_batch.lua:ARGV2", "complete_batch.lua:errors", "§4.2-60"},
	"complete-loose-del":             {"§1.1-1", "§1.1-2", "§7-3"},
	"complete-batch-aborts-at-stale": {"A17-1", "B-251", "L-44", "L-55", "complete_batch.lua:reply", "§4.2-60"},
	"extend-deadline-seconds":        {"B-55", "§4.2-16"},
	"extend-token-unbounded":         {"extend.lua:ARGV2", "§4.2-18"},
	"fail-token-unbounded":           {"L-61", "fail.lua:ARGV2", "§4.2-33"},
	"retry-token-unbounded":          {"retry.lua:ARGV2", "§4.2-30"},

	// Issue 28, the statements no mutant had broken yet.
	// The batch ops' ranges past the kit's JSON layer (uncheckedField).
	"claim-batch-lease-zero":        {"claim_batch.lua:ARGV1", "claim_batch.lua:errors"},
	"claim-batch-n-unbounded":       {"L-42", "claim_batch.lua:ARGV2", "claim_batch.lua:errors"},
	"enqueue-batch-delay-unbounded": {"enqueue_batch.lua:ARGV3", "enqueue_batch.lua:errors"},
	// The durations of A16 past the port's own check and the script's.
	"claim-lease-zero":             {"L-50", "claim.lua:ARGV1", "§4.2-14"},
	"lane-claim-lease-zero":        {"L-67", "lane_claim.lua:ARGV1", "§4.2-53"},
	"extend-lease-zero":            {"extend.lua:ARGV3"},
	"enqueue-delay-unbounded":      {"§4.2-9"},
	"lane-enqueue-delay-unbounded": {"L-69", "lane_enqueue.lua:ARGV4", "§4.2-50"},
	"fail-any-token":               {"§4.2-32"},
	"complete-no-row-check":        {"§4.1-7"},
	"complete-no-state-check":      {"§4.1-8"},
	// The port reads EMQSTALE's message ("no such job") and answers ok: it branches on the
	// text, not the type (§4.3-2), and a pair that confers no right is not refused (§4.3-4).
	"complete-gone-taken-for-done": {"§4.3-2", "§4.3-4"},
	// A fence that compares the version alone answers ok to another bundle's deployment; one
	// that installs the version alone leaves {emq}:bundle without its digest.
	"fence-ignores-digest":        {"L-3", "L-4", "L-91", "fence.lua:errors", "§4.2-2", "§4.2-3", "§4.3-6", "§5.2-2", "§5.2-3"},
	"fence-installs-version-only": {"L-3", "L-64", "fence.lua:reply", "§2.2-15"},
	"enqueue-pending-at-now":      {"§2.2-2"},
	"pause-flag-true":             {"§2.2-8", "§4.2-46"},
	// Calls against the scripts' headers: the canonical script refuses them.
	"pause-passes-flag":      {"L-75"},
	"resume-keys-reordered":  {"L-83"},
	"enqueue-batch-other-id": {"L-41"},
}
