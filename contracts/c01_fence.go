package contracts

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// c01 is contract C01: fence.
var c01 = Contract{ID: "C01", Name: "fence",
	Rule: "HELLO and the bundle fence precede any other command; wrong bundle version → EMQVERSION; wrong-kind server → EMQSERVER; the fence runs again after a reconnect",
	clauses: slices.Concat(conversationClauses, []clause{
		{name: "hello-and-fence-first", body: helloAndFenceFirst},
		{name: "wrong-bundle-version-refused", body: wrongBundleVersionRefused, noHello: true},
		{name: "wrong-bundle-digest-refused", body: wrongBundleDigestRefused, noHello: true},
		{name: "wrong-kind-server-refused", body: wrongKindServerRefused, noHello: true},
		{name: "old-valkey-refused", body: oldValkeyRefused, noHello: true},
		{name: "hello-rejecting-server-refused", body: helloRejectingServerRefused, noHello: true},
		{name: "cluster-valkey-refused", body: clusterValkeyRefused, noHello: true, only: standaloneOnly},
		{name: "server-versions-compared", body: serverVersionsCompared, noHello: true, only: standaloneOnly},
		{name: "connections-dropped-by-the-server", body: connectionsDroppedByTheServer},
		{name: "replies-cut-at-every-byte", body: repliesCutAtEveryByte, noHello: true, only: standaloneOnly},
		{name: "connections-cut-during-their-handshake", body: connectionsCutDuringTheirHandshake, noHello: true, only: standaloneOnly},
		{name: "redials-refused-while-the-server-is-down", body: redialsRefusedWhileTheServerIsDown, noHello: true, only: standaloneOnly},
		{name: "reconnect-during-a-redial", body: reconnectDuringARedial, only: standaloneOnly},
		{name: "dropped-after-a-reconnect-mid-redial", body: droppedAfterAReconnectMidRedial, noHello: true, only: standaloneOnly},
		{name: "dropped-while-an-overtaken-redial-is-in-flight", body: droppedWhileAnOvertakenRedialIsInFlight, noHello: true, only: standaloneOnly},
		{name: "redials-meet-a-loading-server", body: redialsMeetALoadingServer, only: standaloneOnly},
		{name: "hello-over-ipv6", body: helloOverIPv6, noHello: true, only: standaloneOnly},
		{name: "redials-meet-a-busy-server", body: redialsMeetABusyServer, noHello: true, only: standaloneOnly},
		{name: "redials-overtaken-in-their-backoff", body: redialsOvertakenInTheirBackoff, noHello: true, only: standaloneOnly},
		{name: "server-falls-silent-under-a-request", body: serverFallsSilentUnderARequest, noHello: true, only: standaloneOnly},
		{name: "unanswered-connect-refused", body: unansweredConnectRefused, noHello: true, only: standaloneOnly},
		{name: "fence-again-after-reconnect", body: fenceAgainAfterReconnect},
		{name: "standalone-valkey-refused", body: standaloneValkeyRefused, noHello: true, only: clusterOnly},
		// The two longest last: a mutation test stops at its first failure, serially in this
		// order, and a defect the clauses above catch need not wait out their spans.
		{name: "healthy-connections-kept", body: healthyConnectionsKept, only: standaloneOnly},
		{name: "redials-paced-while-refused", body: redialsPacedWhileRefused, noHello: true, only: standaloneOnly},
	}),
}

func helloAndFenceFirst(t *T) {
	b := t.cfg.Bundle
	t.check(t.Hello.Bundle == lua.Version && t.digestOK(t.Hello.Digest), rules.Hello,
		fmt.Sprintf("hello names bundle %s with digest %s", lua.Version, b.Digest()),
		"bundle %q digest %q", t.Hello.Bundle, t.Hello.Digest)
	t.enqueue("orders", "after the fence")
	order, conns := byClient(t.portLines(0))
	t.check(len(order) > 0, rules.Fence, "the port's connections show on the wire", "no command from the port at all")
	t.cover(rules.Fence)
	for _, c := range order {
		ls := conns[c]
		t.check(ls[0].Cmd() == "HELLO", rules.Fence, "HELLO 2 is the first command of every connection", "connection %s began with %s", c, ls[0])
		if !t.fenceShown(ls) {
			continue
		}
		fenced := false
		for _, l := range ls[1:] {
			if l.Cmd() == "SCRIPT" {
				continue
			}
			fenced = l.Cmd() == "EVALSHA" && len(l.Args) == 6 && t.law.IsFence(l.Args[1]) &&
				l.Args[2] == "1" && l.Args[3] == keys.Bundle() && l.Args[4] == lua.Version && t.digestOK(l.Args[5])
			if !fenced {
				t.fail(rules.Fence, "the fence script (KEYS {emq}:bundle, ARGV version and digest) right after HELLO", "connection "+c+" sent "+l.String(), ls[:min(len(ls), 4)]...)
			}
			break
		}
	}
	got := t.hash(keys.Bundle())
	t.check(got["version"] == lua.Version && t.digestOK(got["digest"]) && len(got) == 2, rules.Version,
		"the fence installed {emq}:bundle = {version, digest}", "%v", got)
}

func wrongBundleVersionRefused(t *T) {
	refusedFence(t, "echomq:1.9.0", t.cfg.Bundle.Digest())
	// A deployment key that holds this bundle's digest and no version is not absent, and does
	// not hold the same version and digest: anything else is EMQVERSION (§5.2-2), never an
	// install over it. A refused hello opens no session, so the same process says hello again
	// (B-288).
	t.do("DEL", keys.Bundle())
	refusedFence(t, "", t.cfg.Bundle.Digest())
}

func wrongBundleDigestRefused(t *T) {
	sum := sha1.Sum([]byte("another bundle"))
	refusedFence(t, lua.Version, hex.EncodeToString(sum[:]))
	// Nor is one that holds this bundle's version and no digest (the other half of
	// wrong-bundle-version-refused's digest alone): EMQVERSION (§5.2-2), never an install over it.
	t.do("DEL", keys.Bundle())
	refusedFence(t, lua.Version, "")
}

func wrongKindServerRefused(t *T) {
	t.refusedServer(ServerWrongKind, t.cfg.WrongKind, "a Redis 7 server", rules.Server)
}

func oldValkeyRefused(t *T) {
	t.refusedServer(ServerOldValkey, t.cfg.OldValkey, "a Valkey 8.0.1 (older than 8.1.0)", rules.ServerVersion)
}

func helloRejectingServerRefused(t *T) {
	t.refusedServer(ServerNoHello, t.cfg.NoHello, "a Valkey 8.1 that rejects HELLO", rules.Server)
}

func fenceAgainAfterReconnect(t *T) {
	t.enqueue("orders", "before")
	m := t.mark()
	before, _ := byClient(t.portLines(0))
	t.ok(t.D.Reconnect(t.ctx), rules.Reconnect, "reconnect")
	t.enqueue("orders", "after")
	fresh := t.freshConnectionsFenced(m, before, rules.Reconnect, "reconnect")
	t.check(fresh > 0, rules.Reconnect, "new connections after reconnect, each fenced", "no new connection showed on the wire")
	left := t.stillOpen(before)
	t.check(len(left) == 0, rules.Reconnect, "reconnect drops every connection: each one from before it is closed, not only silent", "still open on the server: %v", left)
}

// freshConnectionsFenced checks the port's connections since mark m: one from before (named in
// before) may only finish a pending blocking pop or minter upkeep, never send anything else;
// each new one sends HELLO 2 first and the fence right after it (§1.2-1, §5-1). It returns how
// many new connections showed.
func (t *T) freshConnectionsFenced(m int, before []string, rule rules.Rule, after string) int {
	order, conns := byClient(t.portLines(m))
	fresh := 0
	t.cover(rule)
	for _, c := range order {
		ls := conns[c]
		if slices.Contains(before, c) {
			// An old connection may only finish a pending blocking pop or minter upkeep;
			// every line it sends after the event is checked, not only its first.
			for _, l := range ls {
				if l.Cmd() != "BLPOP" && !strings.HasPrefix(argAt(l, 1), "{emq}:minter:") {
					t.fail(rule, after+" leaves no connection from before it in use", "connection "+c+" from before the "+after+" still sent "+l.String())
				}
			}
			continue
		}
		fresh++
		t.check(ls[0].Cmd() == "HELLO", rule, "HELLO 2 first on a connection opened after the "+after, "connection %s began with %s", c, ls[0])
		if !t.fenceShown(ls) {
			continue
		}
		for _, l := range ls[1:] {
			if l.Cmd() == "SCRIPT" {
				continue
			}
			t.check(l.Cmd() == "EVALSHA" && t.law.IsFence(argAt(l, 1)), rule, "the fence right after HELLO on a connection opened after the "+after, "connection %s sent %s", c, l)
			break
		}
	}
	return fresh
}

// stillOpen are the clients of before (byClient's names) the server still lists, once they have
// had ten seconds to go: a bound for a connection left open, not a pace.
func (t *T) stillOpen(before []string) []string {
	open := func() []string {
		var left []string
		for _, c := range t.portClients() {
			if slices.Contains(before, c["addr"]) || slices.ContainsFunc(before, func(b string) bool { return strings.HasPrefix(b, c["addr"]+"@") }) {
				left = append(left, c["addr"])
			}
		}
		return left
	}
	left := open()
	for deadline := time.Now().Add(10 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = open() {
		time.Sleep(10 * time.Millisecond)
	}
	return left
}

// refusedServer presents a server the canon does not admit (A12) to a fresh session: hello must
// be refused EMQSERVER, and nothing but HELLO may reach that server (no fence, no minter lease).
func (t *T) refusedServer(srv Server, start Starter, what string, rule rules.Rule) {
	addr := t.needServer(srv, start)
	admin, err := dialAdmin(t.ctx, addr)
	if err != nil {
		t.harness("connect to %s: %v", what, err)
	}
	defer admin.Close()
	mon, err := wire.StartMonitor(t.ctx, addr)
	if err != nil {
		t.harness("MONITOR on %s: %v", what, err)
	}
	defer mon.Close()
	_, err = t.D.Hello(t.ctx, protocol.HelloArgs{Valkey: addr, Cluster: t.cluster()})
	t.refused(err, emqerr.Server, rule, "hello against "+what)
	if err := mon.Sync(t.ctx, admin.Admin, 1); err != nil {
		t.harness("%v", err)
	}
	t.cover(rule)
	for _, l := range mon.Snapshot() {
		if slices.Contains(admin.Locals(), l.Client) || slices.Contains(mon.Locals(), l.Client) || l.Client == "lua" || l.Cmd() == "HELLO" {
			continue
		}
		t.fail(rule, "nothing but HELLO reaches "+what, "the port sent "+l.String())
	}
}

// digestOK: d is the kit's bundle digest (or the admitted edited bundle's, in a self-test).
func (t *T) digestOK(d string) bool {
	return d == t.cfg.Bundle.Digest() || (t.cfg.AdmitDigest != "" && d == t.cfg.AdmitDigest)
}

// refusedFence deploys version and digest (an empty one: the other field alone) and holds the
// port's hello to the fence's refusal.
func refusedFence(t *T, version, digest string) {
	switch {
	case version == "":
		t.do("HSET", keys.Bundle(), "digest", digest)
	case digest == "":
		t.do("HSET", keys.Bundle(), "version", version)
	default:
		t.do("HSET", keys.Bundle(), "version", version, "digest", digest)
	}
	before := t.snapshot()
	_, err := t.D.Hello(t.ctx, t.helloArgs())
	t.refused(err, emqerr.Version, rules.Version, fmt.Sprintf("hello against a deployment of %s/%.8s", version, digest))
	d := diff(before, t.snapshot())
	t.check(d == "", rules.Version, "a refused fence changes nothing", "%s", d)
	t.cover(rules.Refusal)
	for _, l := range t.portCommands(0) {
		if c := l.Cmd(); c == "HELLO" || (c == "SCRIPT" && strings.EqualFold(l.Args[1], "load")) || (c == "EVALSHA" && t.law.IsFence(l.Args[1])) || (c == "CLUSTER" && t.cluster()) {
			continue
		}
		t.fail(rules.Refusal, "nothing but HELLO and the fence from a refused port", "the port sent "+l.String())
	}
}

func clusterValkeyRefused(t *T) {
	t.refusedServer(ServerClusterValkey, t.cfg.ClusterValkey, "a Valkey 8.1 in cluster mode", rules.ServerStandalone)
}

// standaloneValkeyRefused is a cluster run's counterpart of clusterValkeyRefused: the port is in
// cluster mode, where a cluster node is what it wants and a standalone server is the wrong mode.
func standaloneValkeyRefused(t *T) {
	t.refusedServer(ServerStandaloneValkey, t.cfg.StandaloneValkey, "a standalone Valkey 8.1 (to a port in cluster mode)", rules.ClusterServer)
}
