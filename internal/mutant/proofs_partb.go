package mutant

// proofsPartB: the statements of PROTOCOL.md Part B (the port protocol) each mutant breaks
// (proofs.go). The field-row mutants (fieldrows.go) break their own row of "Fields and their
// domains": the domain cell (below its range, lax names and ids, an empty value refused) or the
// "when absent" cell (a required field defaulted, an optional one refused), and the sentence of
// the section or of the op table that says the same of that field.
var proofsPartB = map[string][]string{
	"park-outlives-its-input":                           {"B-286"},
	"json-absent-hello-valkey":                          {"B-103"},
	"json-empty-dialled-hello-valkey":                   {"B-102"},
	"json-default-refused-hello-minter-ttl-ms":          {"B-105", "B-89"},
	"json-below-hello-minter-ttl-ms":                    {"B-104"},
	"json-default-refused-hello-cluster":                {"B-107", "B-89"},
	"json-loose-hello-cluster":                          {"B-106"},
	"json-absent-mint-n":                                {"B-109"},
	"json-below-mint-n":                                 {"B-108"},
	"json-below-mint-parallel":                          {"B-110"},
	"json-absent-key-queue":                             {"B-113", "B-25"},
	"json-lax-key-queue":                                {"B-112"},
	"json-absent-key-type":                              {"B-115"},
	"json-empty-as-pending-key-type":                    {"B-114", "B-94", "B-44"},
	"key-type-members":                                  {"B-44", "B-94", "§4.3-10"},
	"json-absent-key-id":                                {"B-117"},
	"json-lax-key-id":                                   {"B-116"},
	"json-absent-key-lane":                              {"B-119"},
	"json-lax-key-lane":                                 {"B-118"},
	"json-absent-slot-key":                              {"B-121"},
	"json-empty-refused-slot-key":                       {"B-120", "B-98"},
	"json-absent-enqueue-queue":                         {"B-123", "B-25"},
	"json-lax-enqueue-queue":                            {"B-122"},
	"json-absent-enqueue-payload-b64":                   {"B-125", "B-82", "B-83"},
	"json-empty-refused-enqueue-payload-b64":            {"B-124", "B-97"},
	"json-default-refused-enqueue-id":                   {"B-127", "B-49", "B-89"},
	"json-lax-enqueue-id":                               {"B-126"},
	"json-default-refused-enqueue-delay-ms":             {"B-129", "B-47", "B-89"},
	"json-below-enqueue-delay-ms":                       {"B-128"},
	"json-default-refused-enqueue-lane":                 {"B-131", "B-89"},
	"json-lax-enqueue-lane":                             {"B-130"},
	"json-absent-claim-queue":                           {"B-133", "B-25"},
	"json-lax-claim-queue":                              {"B-132"},
	"json-absent-claim-lease-ms":                        {"B-135"},
	"json-below-claim-lease-ms":                         {"B-134"},
	"json-absent-lane-claim-queue":                      {"B-137", "B-25"},
	"json-lax-lane-claim-queue":                         {"B-136"},
	"json-absent-lane-claim-lease-ms":                   {"B-139"},
	"json-below-lane-claim-lease-ms":                    {"B-138"},
	"json-absent-extend-queue":                          {"B-141", "B-25"},
	"json-lax-extend-queue":                             {"B-140"},
	"json-absent-extend-id":                             {"B-143"},
	"json-lax-extend-id":                                {"B-142"},
	"json-absent-extend-token":                          {"B-145"},
	"json-below-extend-token":                           {"B-144"},
	"json-absent-extend-lease-ms":                       {"B-147"},
	"json-below-extend-lease-ms":                        {"B-146"},
	"json-absent-complete-queue":                        {"B-149", "B-25"},
	"json-lax-complete-queue":                           {"B-148"},
	"json-absent-complete-id":                           {"B-151"},
	"json-lax-complete-id":                              {"B-150"},
	"json-absent-complete-token":                        {"B-153"},
	"json-below-complete-token":                         {"B-152"},
	"json-absent-retry-queue":                           {"B-155", "B-25"},
	"json-lax-retry-queue":                              {"B-154"},
	"json-absent-retry-id":                              {"B-157"},
	"json-lax-retry-id":                                 {"B-156"},
	"json-absent-retry-token":                           {"B-159"},
	"json-below-retry-token":                            {"B-158"},
	"json-absent-retry-max-attempts":                    {"B-161"},
	"json-below-retry-max-attempts":                     {"B-160"},
	"json-below-retry-delay-ms":                         {"B-162"},
	"json-absent-retry-error":                           {"B-165"},
	"json-empty-refused-retry-error":                    {"B-164", "B-98"},
	"json-absent-fail-queue":                            {"B-167", "B-25"},
	"json-lax-fail-queue":                               {"B-166"},
	"json-absent-fail-id":                               {"B-169"},
	"json-lax-fail-id":                                  {"B-168"},
	"json-absent-fail-token":                            {"B-171"},
	"json-below-fail-token":                             {"B-170"},
	"json-absent-fail-error":                            {"B-173"},
	"json-empty-refused-fail-error":                     {"B-172", "B-98"},
	"json-absent-checkpoint-queue":                      {"B-175", "B-25"},
	"json-lax-checkpoint-queue":                         {"B-174"},
	"json-absent-checkpoint-id":                         {"B-177"},
	"json-lax-checkpoint-id":                            {"B-176"},
	"json-absent-checkpoint-token":                      {"B-179"},
	"json-below-checkpoint-token":                       {"B-178"},
	"json-absent-checkpoint-data-b64":                   {"B-181"},
	"json-empty-refused-checkpoint-data-b64":            {"B-180", "B-97"},
	"json-absent-reap-queue":                            {"B-183", "B-25"},
	"json-lax-reap-queue":                               {"B-182"},
	"json-absent-reap-max-attempts":                     {"B-185"},
	"json-below-reap-max-attempts":                      {"B-184"},
	"json-default-refused-reap-limit":                   {"B-187", "B-89"},
	"json-below-reap-limit":                             {"B-186"},
	"json-absent-promote-queue":                         {"B-189", "B-25"},
	"json-lax-promote-queue":                            {"B-188"},
	"json-default-refused-promote-limit":                {"B-191", "B-89"},
	"json-below-promote-limit":                          {"B-190"},
	"json-absent-morgue-queue":                          {"B-193", "B-25"},
	"json-lax-morgue-queue":                             {"B-192"},
	"json-default-refused-morgue-limit":                 {"B-195", "B-65", "B-89"},
	"json-below-morgue-limit":                           {"B-194"},
	"json-absent-revive-queue":                          {"B-197", "B-25"},
	"json-lax-revive-queue":                             {"B-196"},
	"json-absent-revive-id":                             {"B-199"},
	"json-lax-revive-id":                                {"B-198"},
	"json-absent-purge-queue":                           {"B-201", "B-25"},
	"json-lax-purge-queue":                              {"B-200"},
	"json-absent-purge-id":                              {"B-203"},
	"json-lax-purge-id":                                 {"B-202"},
	"json-absent-pause-queue":                           {"B-205", "B-25"},
	"json-lax-pause-queue":                              {"B-204"},
	"json-absent-resume-queue":                          {"B-207", "B-25"},
	"json-lax-resume-queue":                             {"B-206"},
	"json-absent-lane-pause-queue":                      {"B-209", "B-25"},
	"json-lax-lane-pause-queue":                         {"B-208"},
	"json-absent-lane-pause-lane":                       {"B-211"},
	"json-lax-lane-pause-lane":                          {"B-210"},
	"json-absent-lane-resume-queue":                     {"B-213", "B-25"},
	"json-lax-lane-resume-queue":                        {"B-212"},
	"json-absent-lane-resume-lane":                      {"B-215"},
	"json-lax-lane-resume-lane":                         {"B-214"},
	"json-absent-lane-ceiling-queue":                    {"B-217", "B-25"},
	"json-lax-lane-ceiling-queue":                       {"B-216"},
	"json-absent-lane-ceiling-lane":                     {"B-219"},
	"json-lax-lane-ceiling-lane":                        {"B-218"},
	"json-below-lane-ceiling-ceiling":                   {"B-220"},
	"json-absent-park-queue":                            {"B-223", "B-25"},
	"json-lax-park-queue":                               {"B-222"},
	"json-absent-park-consumers":                        {"B-225"},
	"json-below-park-consumers":                         {"B-224"},
	"json-absent-park-jobs":                             {"B-227"},
	"json-below-park-jobs":                              {"B-226"},
	"json-absent-park-lease-ms":                         {"B-229"},
	"json-below-park-lease-ms":                          {"B-228"},
	"json-absent-park-park-ms":                          {"B-231"},
	"json-below-park-park-ms":                           {"B-230"},
	"json-absent-park-timeout-ms":                       {"B-233"},
	"json-below-park-timeout-ms":                        {"B-232"},
	"json-default-refused-clock-set-ms":                 {"B-235", "B-89"},
	"json-below-clock-set-ms":                           {"B-234"},
	"json-default-refused-clock-scale":                  {"B-237", "B-78", "B-89"},
	"json-below-clock-scale":                            {"B-236"},
	"json-absent-enqueue-batch-queue":                   {"B-254", "B-25"},
	"json-lax-enqueue-batch-queue":                      {"B-253"},
	"json-absent-enqueue-batch-jobs":                    {"B-256"},
	"json-below-enqueue-batch-jobs":                     {"B-255"},
	"json-absent-enqueue-batch-jobs-payload-b64":        {"B-258"},
	"json-empty-refused-enqueue-batch-jobs-payload-b64": {"B-257", "B-97"},
	"json-default-refused-enqueue-batch-jobs-id":        {"B-260", "B-89"},
	"json-lax-enqueue-batch-jobs-id":                    {"B-259"},
	"json-default-refused-enqueue-batch-jobs-delay-ms":  {"B-262", "B-89"},
	"json-below-enqueue-batch-jobs-delay-ms":            {"B-261"},
	"json-absent-claim-batch-queue":                     {"B-264", "B-25"},
	"json-lax-claim-batch-queue":                        {"B-263"},
	"json-absent-claim-batch-lease-ms":                  {"B-266"},
	"json-below-claim-batch-lease-ms":                   {"B-265"},
	"json-absent-claim-batch-n":                         {"B-268"},
	"json-below-claim-batch-n":                          {"B-267"},
	"json-absent-complete-batch-queue":                  {"B-270", "B-25"},
	"json-lax-complete-batch-queue":                     {"B-269"},
	"json-absent-complete-batch-jobs":                   {"B-272"},
	"json-below-complete-batch-jobs":                    {"B-271"},
	"json-absent-complete-batch-jobs-id":                {"B-274"},
	"json-lax-complete-batch-jobs-id":                   {"B-273"},
	"json-absent-complete-batch-jobs-token":             {"B-276"},
	"json-below-complete-batch-jobs-token":              {"B-275"},

	// opfront.go: a row of the op table answered otherwise.
	"mint-lists-reversed":       {"B-40"},  // "each list in the order its caller received them"
	"enqueue-lane-plain-script": {"B-51"},  // "With lane: the lane enqueue script"
	"claim-empty-not-null":      {"B-52"},  // claim's result: null
	"batch-enqueue-reversed":    {"B-246"}, // "one {id, created} per job, in order"
	"key-ckpt-spelled-out":      {"B-42"},  // key's result: the key
	"reap-count-whether":        {"B-62"},  // reap's result: count
	"morgue-drains":             {"B-67"},  // morgue "reads only"
	"park-one-short":            {"B-74"},  // "until jobs jobs were claimed and completed"
	"park-completes-unreported": {"B-294"},
	"park-drains-the-backlog":   {"B-301"},
	"clock-ignores-scale":       {"B-79"}, // "advances 1 ms per scale real ms"

	// stdio.go: the line protocol broken in the port binary (run as emq-port).
	"stdio-reply-pretty-printed": {"B-1", "§6-1"},  // "one JSON object per line" (each way, canon §6)
	"stdio-log-on-stdout":        {"B-3"},          // "A port prints nothing else to standard output"
	"stdio-seq-counted":          {"B-4", "§6-1"},  // "seq is echoed"; canon §6: a reply {"seq":N,…} to request N
	"stdio-error-type-unlisted":  {"B-14"},         // error.type one of the listed values
	"stdio-ok-omitted":           {"B-21", "§6-1"}, // "prints a line that is not a valid reply"; canon §6: {"seq":N,"ok":true,"result":…}
	"stdio-empty-result-null":    {"B-26"},         // "Results are JSON objects unless noted"
	"stdio-close-exits-1":        {"B-24"},         // "After close the port exits with status 0"
	"input-cut-line-awaited":     {"B-302"},        // "ends its session all the same"

	// Older mutants that break a Part B sentence too.
	"json-fraction-token":         {"B-87"},          // "1.5 is not one"
	"json-string-lease":           {"B-11"},          // "Durations are integers in milliseconds"
	"json-b64-unpadded":           {"B-9"},           // "standard base64 with padding"
	"extend-deadline-seconds":     {"B-13"},          // "replies carry the server's: deadline_ms"
	"wrong-kind-accepted":         {"B-29"},          // hello's errors: EMQSERVER
	"version-refusal-ignored":     {"B-29"},          // hello's errors: EMQVERSION
	"ttl-undeclared-refused":      {"B-279"},         // a field a port does not offer binds it nowhere
	"reap-capped-100":             {"B-61", "B-187"}, // reap's limit defaults to 1000
	"promote-capped-100":          {"B-63", "B-191"}, // promote's limit defaults to 1000
	"morgue-default-1000":         {"B-65"},          // morgue's limit defaults to 100
	"pause-ignored":               {"B-70"},          // pause is queue-wide
	"lane-pause-keeps-ring":       {"B-71"},          // lane_pause takes the lane out of service
	"cluster-wrong-node":          {"B-34", "B-241"}, // every call to the primary owning its slot
	"asking-dropped":              {"A4-5"},          // "sends ASKING before a call an ASK redirected"
	"cluster-standalone-fallback": {"B-243"},         // a standalone server refused EMQSERVER in a cluster run
}
