package mutant

// proofsC08toC14: the statements each catalogue mutant of C08–C14 breaks (proofs.go). A mutant
// names a statement only when its defect makes the port contradict what that sentence says, not
// when it merely touches the same rule. Where a sentence states when something happens ("re-arms
// while work remains", "when they moved anything", "a lane that becomes serviceable rejoins"),
// doing it outside that condition breaks it too. Mutants of a rule with one traced statement
// prove it without an entry; a mutant absent here breaks none of its rule's statements as
// written (the sentence it does break is traced to another rule, or it only widens an effect
// onto other jobs, which no traced sentence of its rule forbids).
var proofsC08toC14 = map[string][]string{
	"silent-line-waited-out": {"B-290"},
	// A10: the wake list holds at most one token; arming pushes only onto an empty list.
	"lane-enqueue-wake-twice": {"A10-1", "A10-2", "L-22", "§2.2-9", "§4.5-1", "§7-20"},
	"promote-arm-pushes":      {"A10-1", "A10-2", "L-22", "§2.2-9", "§4.5-1", "§7-20"},
	"reap-arm-pushes":         {"A10-1", "A10-2", "L-22", "§2.2-9", "§4.5-1", "§7-20"},
	"revive-arm-pushes":       {"A10-1", "A10-2", "L-22", "§2.2-9", "§4.5-1", "§7-20"},
	"promote-wake-twice":      {"A10-1", "§2.2-9", "§4.5-1", "§7-20"},
	"reap-wake-twice":         {"A10-1", "§2.2-9", "§4.5-1", "§7-20"},
	"retry-wake-twice":        {"A10-1", "§2.2-9", "§4.5-1", "§7-20"},
	"revive-wake-twice":       {"A10-1", "§2.2-9", "§4.5-1", "§7-20"},
	"wake-twice":              {"A10-1", "§2.2-9", "§4.5-1", "§7-20"},

	// A13: which scripts arm the wake, and when.
	"revive-no-wake":                   {"A13-1", "L-88", "revive.lua:reply"},
	"claim-rearm-always":               {"A13-2", "L-28", "L-51", "claim.lua:reply", "§4.2-12", "§4.5-3"},
	"claim-rearm-skips-ring":           {"A13-2", "L-28", "L-51", "claim.lua:reply", "§4.2-12", "§4.5-3"},
	"paused-claim-arms":                {"A13-4", "L-29", "§4.5-4"},
	"paused-lane-claim-arms":           {"A13-4", "L-29", "§4.5-4"},
	"enqueue-delayed-no-arm":           {"A13-1", "L-30", "L-57", "enqueue.lua:reply", "§4.2-7", "§4.5-2"},
	"enqueue-duplicate-arms":           {"L-57", "enqueue.lua:reply"}, // "0 the row exists, nothing changed"
	"lane-ceiling-no-arm":              {"A13-3", "L-31"},
	"lane-claim-no-rearm":              {"A13-2", "L-28", "L-68", "lane_claim.lua:reply", "§4.5-3"},
	"lane-claim-rearm-ignores-pending": {"A13-2", "L-28", "L-68", "lane_claim.lua:reply", "§4.5-3"},
	"lane-enqueue-no-arm":              {"A13-1", "L-30", "L-70", "lane_enqueue.lua:reply", "§4.2-48"},
	"lane-resume-no-arm":               {"A13-3", "L-31"},
	"promote-arms-always":              {"A13-1", "L-78", "promote.lua:reply", "§4.5-2"},
	"promote-no-arm":                   {"A13-1", "L-78", "promote.lua:reply", "§4.5-2"},
	"reap-arms-always":                 {"A13-1", "L-82", "reap.lua:reply", "§4.5-2"},
	"reap-bury-arms":                   {"A13-1", "L-82", "reap.lua:reply", "§4.5-2"},
	"reap-requeue-no-arm":              {"A13-1", "L-82", "reap.lua:reply", "§4.5-2"},
	"complete-arms-always":             {"A13-3", "L-31", "L-53", "complete.lua:reply"},
	// A13-3's "a consumer parked while every lane sat at its ceiling must wake when one reopens".
	"complete-batch-rejoin-no-arm":   {"A13-3"},
	"complete-rejoin-no-arm":         {"A13-3", "L-31", "L-53", "complete.lua:reply"},
	"fail-rejoin-no-arm":             {"A13-3", "L-31"},
	"reap-dead-rejoin-no-arm":        {"A13-3", "L-31", "L-82", "reap.lua:reply"},
	"retry-dead-rejoin-no-arm":       {"A13-3", "L-31"},
	"resume-ignores-ring":            {"A13-1"},
	"retry-dead-arms":                {"A13-1", "§4.5-2"},
	"retry-delayed-no-arm":           {"A13-1", "§4.5-2"},
	"lane-claim-rearm-ignores-plain": {"A13-2", "§4.5-3"},
	"lane-claim-rearm-ignores-ring":  {"A13-2", "§4.5-3"},
	"lanes-claim-rearm-ignores-ring": {"A13-2", "§4.5-3"},
	"paused-lane-claim-arms-wake":    {"§4.5-4"},
	"promote-always-arms":            {"L-78", "promote.lua:reply", "§4.5-2"},
	"reap-always-arms":               {"L-82", "reap.lua:reply", "§4.5-2"},
	"retry-no-wake":                  {"L-86", "retry.lua:reply", "§4.2-27", "§4.5-2"},

	// A14 and §4.4: the ring holds exactly the serviceable lanes, each once, in order.
	"active-count-left-at-zero":          {"A14-4", "L-25"},
	"lane-enqueue-moves-lane-to-tail":    {"A14-1", "L-24", "§4.2-48", "§4.4-5"},
	"lane-enqueue-rejoins-at-head":       {"A14-2", "L-24", "§4.2-48", "§4.4-4"},
	"complete-no-rejoin":                 {"L-23", "L-24", "§2.2-12", "§4.2-23", "§4.4-1", "§7-18"},
	"complete-rejoins-paused-lane":       {"L-23", "L-24", "§2.2-12", "§4.2-23", "§4.4-1", "§7-18"},
	"lane-claim-pops-newest":             {"§4.2-51", "§4.4-2"},
	"lane-claim-replies-lane-key":        {"A3-2"},
	"walk-completed-row-kept":            {"§4.1-2"},
	"lane-enqueue-duplicates-ring-entry": {"L-23", "L-24", "§2.2-12", "§4.2-48", "§4.4-1", "§7-18"},
	"ring-keeps-empty-lane":              {"A14-3", "L-23", "L-24", "L-68", "lane_claim.lua:reply", "§2.2-12", "§4.4-1", "§4.4-3", "§7-18"},
	"lane-claim-not-counted":             {"§2.2-13", "§4.4-2"},
	"lane-drains-before-rotating":        {"§4.2-51", "§4.4-6", "§7-18"},

	// A6: pauses.
	"lane-claim-ignores-queue-pause": {"A6-1", "L-68", "lane_claim.lua:reply"},
	"pause-ignored":                  {"A6-1", "L-51", "claim.lua:reply", "§4.2-10", "§7-12"},
	"complete-ignores-lane-pause":    {"§4.4-1", "§7-19"},
	"lane-ceiling-ignores-pause":     {"§4.4-1", "§7-19"},
	"lane-pause-keeps-ring":          {"A14-3", "§4.2-54", "§4.4-1", "§4.4-3", "§7-19"},
	"promote-ignores-lane-pause":     {"§4.4-1", "§7-19"},
	"reap-ignores-lane-pause":        {"§4.4-1", "§7-19"},
	"retry-ignores-lane-pause":       {"§4.4-1", "§7-19"},
	"revive-ignores-lane-pause":      {"§4.4-1", "§7-19"},
	"lane-resume-at-head":            {"§4.4-4"},
	"lane-resume-ignores-ceiling":    {"§4.4-4", "§7-19"},

	// A7: lane ceilings.
	"ceiling-ignored":              {"A7-1", "A7-3", "§4.2-56", "§7-19"},
	"revive-ignores-ceiling":       {"A7-3"},
	"ceiling-off-by-one":           {"A7-1", "§4.4-1"},
	"lane-enqueue-ignores-ceiling": {"A7-1", "§4.4-1"},
	"ceiling-lowered-keeps-ring":   {"A14-3", "A7-3", "§4.4-3"},
	"ceiling-zero-stored":          {"A7-2", "B-72", "L-37", "lane_ceiling.lua:ARGV2", "§4.2-56", "§4.4-4"},
	"fail-no-rejoin":               {"A7-4", "§4.4-4"},
	"retry-dead-no-rejoin":         {"A7-4", "§4.4-4"},

	// Lane jobs return to their lane, and the lane to the ring.
	"promote-lane-job-to-plain-pending": {"§4.2-37"},
	"reap-lane-job-to-plain-pending":    {"§4.2-34"},
	"reap-no-rejoin":                    {"§4.4-4"},
	"retry-no-rejoin":                   {"§4.4-4"},
	"revive-ignores-laneof":             {"A15-2", "L-36", "§4.2-40"},
	"walk-lane-delay-no-laneof":         {"§2.2-14", "§4.2-48"},
	"lane-enqueue-score-one":            {"§2.2-11"},

	// A3: checkpoints.
	"checkpoint-truncates-at-nul":          {"§4.2-19"},
	"checkpoint-first-write-wins":          {"§4.2-19"},
	"checkpoint-dropped":                   {"§7-17"},
	"checkpoint-ignores-token":             {"B-60", "checkpoint.lua:errors", "§4.2-20"},
	"claim-checkpoint-from-third":          {"A3-1", "B-53", "L-26", "L-27", "L-51", "claim.lua:reply", "§4.2-13"},
	"claim-empty-checkpoint-is-none":       {"A3-1", "B-53", "L-26", "L-51", "claim.lua:reply", "§4.2-13"},
	"claim-none-as-empty":                  {"A3-1", "B-53", "L-26", "L-51", "claim.lua:reply", "§4.2-13"},
	"complete-keeps-redelivery-checkpoint": {"A3-4", "L-34", "L-53", "complete.lua:reply", "§4.2-22"},
	"reap-drops-checkpoint":                {"A3-3", "L-33"},
	"retry-drops-checkpoint":               {"A3-3", "L-33"},

	// complete.
	"complete-keeps-checkpoint":         {"L-53", "complete.lua:reply", "§4.1-3", "§4.2-22", "§7-14"},
	"complete-error-from-third-attempt": {"L-53", "complete.lua:reply", "§4.2-22"},
	"complete-keeps-laneof":             {"L-36", "L-53", "complete.lua:reply", "§4.2-22", "§7-14"},
	"complete-no-lane-release":          {"L-53", "complete.lua:reply", "§4.2-22", "§7-14"},

	// A17: complete_batch gives each pair exactly complete's effect.
	"complete-batch-drops-last":         {"A17-1", "L-40", "§4.2-58"},
	"complete-batch-empty-lane-rejoins": {"A17-1", "L-40", "L-45", "L-55", "complete_batch.lua:reply", "§4.2-58"},
	"complete-batch-ignores-lane-pause": {"A17-1", "L-40", "L-45", "L-55", "complete_batch.lua:reply", "§4.2-58"},
	"complete-batch-releases-two":       {"A17-1", "L-40", "L-45", "L-55", "complete_batch.lua:reply", "§4.2-58"},

	// fail, retry, the morgue and A15's errors.
	"fail-first-error-wins":      {"A15-1", "L-61", "§2.2-6", "§4.2-31"},
	"fail-forgets-error":         {"A15-1", "L-61", "§2.2-6", "§4.2-31"},
	"fail-death-in-seconds":      {"L-62", "fail.lua:reply", "§2.2-5", "§4.2-31"},
	"fail-newest-first":          {"B-66"},
	"retry-at-max-strict":        {"A8-1", "L-32", "§4.2-26", "§7-16"},
	"retry-dead-after-delay":     {"A8-1", "L-32", "L-86", "retry.lua:reply", "§4.2-26"},
	"retry-dead-arms-wake":       {"A8-1", "L-32", "L-86", "retry.lua:reply", "§4.2-26"},
	"retry-no-delay":             {"L-85", "§4.2-27", "§7-15"},
	"retry-delay-as-seconds":     {"retry.lua:ARGV4", "§4.2-27"},
	"retry-first-error-wins":     {"A15-1", "L-35", "§2.2-6", "§4.2-27", "§7-15"},
	"retry-forgets-error":        {"A15-1", "L-35", "§2.2-6", "§4.2-27", "§7-15"},
	"retry-zero-delay-scheduled": {"retry.lua:ARGV4", "§4.2-27"},
	"purge-keeps-checkpoint":     {"A15-3", "A3-4", "L-34", "L-80", "purge.lua:reply", "§4.2-43"},
	"purge-keeps-error":          {"A15-3", "L-80", "purge.lua:reply", "§4.2-43"},
	"purge-keeps-laneof":         {"A15-3", "L-36", "§4.2-43"},
	"purge-keeps-row":            {"§4.2-43", "§7-16"},
	"walk-purge-keeps-laneof":    {"§4.2-43"},
	"purge-any-state":            {"B-69", "L-80", "purge.lua:reply", "§4.2-44"},
	"revive-any-state":           {"B-68", "L-88", "revive.lua:reply", "§4.2-41"},
	"revive-keeps-error":         {"A15-2", "L-35", "§4.2-40"},
	"walk-revive-keeps-error":    {"A15-2", "§4.2-40"},
	"revive-stays-in-dead":       {"§4.2-40"},
	"revive-resets-attempts":     {"§4.1-4", "§4.2-40"},

	// promote and reap.
	"promote-leaves-scheduled":       {"§4.2-37"},
	"promote-count-flag":             {"B-64", "L-78", "promote.lua:reply", "§4.2-38"},
	"promote-capped-100":             {"§4.2-37"},
	"promote-ignores-limit":          {"§4.2-37"},
	"reap-capped-100":                {"§4.2-34"},
	"reap-ignores-limit":             {"§4.2-34"},
	"reap-live-leases":               {"§4.2-34"},
	"reap-bumps-attempts":            {"§4.1-4", "§4.2-34"},
	"reap-buries-one-early":          {"§4.2-34"},
	"reap-death-in-seconds":          {"§2.2-5"},
	"reap-death-keeps-earlier-error": {"L-82", "reap.lua:reply", "§2.2-6", "§4.2-34"},
	"reap-wrong-error":               {"L-82", "reap.lua:reply", "§4.2-34"},
	"reap-deadline-exclusive":        {"A2-3", "L-21", "§4.1-10", "§4.2-34"},
	"reap-grace-minute":              {"A2-3", "L-21", "§4.1-10", "§4.2-34"},

	// The park op: idle consumers send nothing but BLPOP.
	"claim-after-timeout":    {"A10-6", "B-75", "§1.6-1", "§7-20"},
	"wake-taken-for-timeout": {"A10-5"},
	// A pop longer than the silence bound keeps its line: its reply is due at its end.
	"pop-read-timeout-10s":      {"B-292", "B-290"},
	"park-maintains-while-idle": {"B-75", "§1.6-1", "§7-20"},
	"poll-park":                 {"A10-3", "B-75", "§1.6-1", "§7-20"},
	"park-line-pinged":          {"A10-3"},
	// The pool parks before its first claim: a backlog whose token is gone waits (A10-5, A10-7).
	"park-before-first-claim": {"A10-5", "A10-7"},
	// A last look with claim_batch before each park: a claim no wake asked for, by a batch
	// (A17-2), sent by a consumer with nothing to do (§1.6-1, B-75).
	"claim-batch-look-before-park": {"A17-2", "B-75", "§1.6-1"},
	// Every connect also opens a twin that is never closed: left open after the park answers
	// and after close.
	"socket-leaked-per-connect": {"B-287", "B-77"},

	// Part B's fields: a port holds each request to its field's domain.
	"json-b64-line-break":             {"B-17", "B-180", "B-96", "§4.3-14"},
	"morgue-default-1000":             {"B-195", "B-7", "B-89"},
	"json-morgue-limit-zero-default":  {"B-194", "B-90", "B-91", "§4.3-16"},
	"json-park-consumers-zero":        {"B-224", "B-90", "B-91", "§4.3-16"},
	"json-promote-limit-zero-default": {"A16-5", "B-190", "B-90", "B-91", "§4.3-12"},
	"json-reap-limit-zero-default":    {"A16-5", "B-186", "B-90", "B-91", "§4.3-12"},
	"json-ceiling-absent-zero":        {"B-18", "B-221", "B-72", "B-84", "§4.3-13"},
	"json-retry-delay-optional":       {"B-163", "B-18", "B-84", "§4.3-13"},

	"lane-pause-replies-2": {"L-72", "lane_pause.lua:reply"},

	// Issue 28: the other replies the port protocol discards (each "Reply: 1."), and replies a
	// port passes on.
	"pause-replies-2":            {"L-76", "pause.lua:reply"},
	"resume-replies-2":           {"L-84", "resume.lua:reply"},
	"lane-resume-replies-2":      {"L-74", "lane_resume.lua:reply"},
	"lane-ceiling-replies-2":     {"L-66", "lane_ceiling.lua:reply"},
	"checkpoint-replies-2":       {"L-49", "checkpoint.lua:reply"},
	"retry-dead-replies-retried": {"L-86", "retry.lua:reply", "§4.2-28"},
	"reap-count-flag":            {"§4.2-35"},
	// Calls against the scripts' headers: the canonical script refuses them.
	"lane-pause-passes-key":  {"L-71"},
	"lane-resume-other-lane": {"L-73"},
	"purge-other-id":         {"L-79"},
	"revive-other-id":        {"L-87"},
	// The ceiling's range past the kit's JSON layer (uncheckedField).
	"lane-ceiling-unbounded": {"L-65", "§4.2-57"},
}
