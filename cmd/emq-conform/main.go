// Command emq-conform certifies an EchoMQ port: it runs the fourteen wire contracts (C01–C14)
// against the port and a Valkey 8.1, prints one line per contract, ends with CONFORMANCE n/14
// and writes a certification folder (transcript, JUnit XML, JSON, HTML, badge, facts).
//
//	emq-conform [-port 'CMD'] -valkey ADDR [-wrong-kind ADDR] [-valkey80 ADDR] [-cluster-node ADDR]
//	            [-out DIR] [-known-failing FILE] [-known-flaky FILE] [-label C09] [-focus REGEXP] [-seed N]
//	            [-admit-scripts DIR] [-deadline 10s] [-list]
//	emq-conform -cluster ADDR,ADDR,… [-standalone-valkey ADDR] …   # against a Valkey Cluster
//	emq-conform -cluster start …   # emq-engines starts a 3-primary cluster
//
// Without -port it certifies the in-process reference bus. It is given its servers by address
// and links no engine code; a clause that needs a server it was not given is reported NOT RUN,
// and the run is then not a certification. Without -valkey (or EMQ_VALKEY_ADDR) it runs the
// kit's emq-engines — beside this binary, on PATH, or built inside the kit's checkout — as a
// child for every server. A given Valkey must be dedicated: every clause FLUSHALLs it.
// -admit-scripts DIR judges a port's edited copy of lua/ on behaviour alone (never certifies).
// Exit status: 0 certified (or every selected clause passed, or failed only as -known-failing or
// -known-flaky lists it), 1 a contract failed or is not claimed or a known list is stale, 2 the
// harness could not run (no Valkey, a bad flag, a line of a known list that is not a pattern).
//
// The kit's own self-test flags (-mutant, -admit-mutant-scripts) are in cmd/emq-selftest.
package main

import (
	"os"

	"github.com/echomq/kit/internal/conformcli"
)

func main() { os.Exit(conformcli.Main("emq-conform", os.Args[1:], os.Stdout, os.Stderr, nil)) }
