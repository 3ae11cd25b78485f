package rules

import "slices"

// The cluster rules: the wire law's additions in a run against a Valkey Cluster (Config.Cluster).
// They are evaluated by every clause of a cluster run and by no clause of a standalone one, so
// they are listed apart from All (Cluster) and TRACEABILITY.md shows them in their own
// table.
var (
	ClusterOneSlot = Rule{"cluster-one-slot", `canon §2.3: "The hash tag of every per-queue key is the queue name, so all keys of one queue fall in one cluster slot" — in cluster mode every call the port sends (a script's KEYS, a command's keys, the keys its script lines touch) answers one slot, so one node runs it whole`}
	ClusterOwner   = Rule{"cluster-owner", `contracts/PROTOCOL.md Part B hello, cluster: "sends every call to the primary owning its keys' slot" — every keyed call a primary's MONITOR shows is on a slot that primary owns (after ASKING only while a slot moves)`}
	ClusterServer  = Rule{"cluster-server", `contracts/PROTOCOL.md Part B hello, cluster: "A standalone server is then refused EMQSERVER" — canon §5.1: refused "before the fence script runs and before any other command is sent"`}
	ClusterNoLeft  = Rule{"cluster-no-redirect-left", `contracts/PROTOCOL.md Part B hello, cluster: "on a node not owning the {emq} slot the fence answers MOVED and runs on that slot's owner … sends every call to the primary owning its keys' slot" — in a clause without a slot migration no primary answers the port CROSSSLOT or ASK, and MOVED only to a handshake's fence on a node not owning {emq} (at most one per connection to it)`}
)

// clusterRules are evaluated by every clause of a cluster run.
var clusterRules = []Rule{ClusterOneSlot, ClusterOwner, ClusterNoLeft}

// Cluster lists the rules only a cluster run evaluates: the wire law's additions (every clause
// of it) and C01's refusal of a standalone server.
func Cluster() []Rule { return append(ClusterLaw(), ClusterServer) }

// ClusterLaw are the wire law's additions, which every clause of a cluster run evaluates.
func ClusterLaw() []Rule { return slices.Clone(clusterRules) }
