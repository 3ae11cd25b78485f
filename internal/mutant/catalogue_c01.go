package mutant

import (
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/reference/bus"
)

// c01 are the mutants contract C01 must kill: the server check loosened beyond the name (a
// handshake of its own through the bus's Handshake seam), and an edited fence script.
var c01 = []Spec{
	{Name: "old-valkey-accepted", Contract: "C01", Rule: "A12-server-version", Defect: "the server check reads the name but not the version: a Valkey 8.0 is admitted",
		Go: seams(func(s *bus.Seams) { s.Handshake = nameOnly(true, false) })},
	{Name: "version-compared-as-text", Contract: "C01", Rule: "A12-server-version", Defect: "the server's version is compared as a string: a Valkey 10.0.0 sorts before 8.1.0 and is refused",
		Go: seams(func(s *bus.Seams) { s.Handshake = versionBy(versionAsText) })},
	{Name: "version-major-eight", Contract: "C01", Rule: "A12-server-version", Defect: "the server check wants major 8 and minor at least 1: a Valkey 9.0.0 is refused",
		Go: seams(func(s *bus.Seams) { s.Handshake = versionBy(versionMajorEight) })},
	{Name: "version-major-only", Contract: "C01", Rule: "A12-server-version", Defect: "the server check reads the major alone: a Valkey 8.0.99 is admitted (8.0.1, the kit's real old server, too)",
		Go: seams(func(s *bus.Seams) { s.Handshake = versionBy(versionMajorOnly) })},
	{Name: "cluster-accepted", Contract: "C01", Rule: "A12-server-standalone", Defect: "the server check ignores the mode: a cluster-enabled Valkey is admitted by a port that has not declared cluster support",
		Go: seams(func(s *bus.Seams) { s.Handshake = nameOnly(false, true) })},
	{Name: "version-refusal-ignored", Contract: "C01", Rule: "version", Defect: "the fence's EMQVERSION is logged as a warning and the session goes on against another bundle's deployment",
		Go: seams(func(s *bus.Seams) { s.Handshake = versionWarns })},
	{Name: "refusal-reads-on", Contract: "C01", Rule: "refusal-clean", Defect: "after the fence's EMQVERSION the port reads the deployed bundle record (HGETALL {emq}:bundle) to word its error: a refused port sends more than HELLO and the fence",
		Go: seams(func(s *bus.Seams) { s.Handshake = refusalReadsOn })},
	{Name: "hello-bare-version", Contract: "C01", Rule: "hello", Defect: "hello names the bundle by its bare number (2.0.0) instead of echomq:2.0.0",
		Go: front(func(d drivers.Driver) drivers.Driver { return bareVersionFront{d} })},
	{Name: "fence-refuses-own-bundle", Contract: "C01", Rule: "version", Defect: "the fence compares the deployed digest with the record's third field (absent): it installs the bundle, then refuses it EMQVERSION on every later connection (make mutation's bundle survivor fence.lua:24, seed 97903, once the bundle side could run an edited fence)",
		Edits: []Edit{{"fence", "if have[1] == version and have[2] == digest then return 'ok' end", "if have[1] == version and have[3] == digest then return 'ok' end"}}},
	{Name: "server-check-after-fence", Contract: "C01", Rule: "server", Defect: "the handshake runs the bundle fence before its server check: a Valkey 8.0 or a cluster node is refused EMQSERVER, but only after the fence script ran on it",
		Go: seams(func(s *bus.Seams) { s.Handshake = fenceBeforeCheck })},
}
