package rules

// The port protocol's own rules (contracts/PROTOCOL.md Part B): what a port owes the
// conversation itself, beside each op's effect. C01 owns them (conversation.go, inflight.go,
// dropped.go, chopped.go).

var rulesConversation = []Rule{SeqEcho, UnknownOp, SecondHello, AidUnsupported, AidIgnored, AidTTL, ClusterRefused, ValkeyIPv6, InFlight, Dropped, RedialPaced, Silent, Chopped, BadLine, BadLineInTurn, InputEnded, ConnectionsClosed, ConnectionsKept, LateReply, RefusedClosed, RedialOnce}

var (
	SeqEcho        = Rule{"seq-echo", `contracts/PROTOCOL.md Part B: "seq is echoed" — whatever the number the kit sends (not a count of the port's own), and "the reply to request n is the n-th line the port prints"`}
	UnknownOp      = Rule{"unknown-op", `contracts/PROTOCOL.md Part B: "A failed op answers ok: false with error.type one of … UNSUPPORTED (an op the port does not implement)" — an op the protocol does not have is one, and the session goes on`}
	SecondHello    = Rule{"second-hello", `contracts/PROTOCOL.md Part B: "a second hello on an open session is EMQARG" — and the open session goes on unchanged`}
	AidUnsupported = Rule{"aid-unsupported", `contracts/PROTOCOL.md Part B clock: "a test aid, only for a port declaring capability clock … Other ports answer UNSUPPORTED"; Fields: "An op behind a capability the port does not declare … is answered UNSUPPORTED whatever its fields"`}
	AidTTL         = Rule{"aid-minter-ttl", `contracts/PROTOCOL.md Part B hello: "minter_ttl_ms (a test aid, capability minter_ttl): lease the worker id for that many ms instead of the port's default"`}
	AidIgnored     = Rule{"aid-ignored", `contracts/PROTOCOL.md Part B hello: "minter_ttl_ms (a test aid, capability minter_ttl) … a port without the capability ignores it"`}
	ValkeyIPv6     = Rule{"valkey-ipv6", `contracts/PROTOCOL.md Part B hello: "valkey's host is a name, an IPv4 address or an IPv6 address in brackets ([::1]:6379): the port connects to the address it names, without the brackets"`}
	ClusterRefused = Rule{"cluster-refused", `contracts/PROTOCOL.md Part B hello: "cluster: true (capability cluster): open in cluster mode … A standalone server is then refused EMQSERVER; a port without the capability answers an error"; "A refused hello opens no session: the process goes on serving, and a later hello to it is answered as a first one"`}
)

// InFlight: requests written ahead of their replies are served in order (inflight.go).
var InFlight = Rule{"in-flight", `contracts/PROTOCOL.md Part B: "the reply to request n is the n-th line the port prints" and "The kit may write a request before the reply to the one before it has arrived: a port serves requests in the order it reads them, each seeing the effects of those before it"`}

// RedialPaced: a port's redials pause between attempts while the server refuses them (dropped.go).
var RedialPaced = Rule{"redial-paced", `contracts/PROTOCOL.md Part B: "A port that redials by itself pauses between its attempts while the server refuses or drops them: over an outage of t seconds it makes at most 5 + 10·t connection attempts for each connection it lost"`}

// Silent: a connection whose server fell silent is found lost, and B-282 applies (dropped.go).
var Silent = Rule{"silent-server", `contracts/PROTOCOL.md Part B: "When the server falls silent on a connection without closing it, the port finds the connection lost, and closes it, within 10 s of a reply falling due (a blocking pop's reply falls due when its timeout ends), and the loss is one B-282 speaks of"`}

// Dropped: a connection the server drops is redialled, handshake first (dropped.go).
var Dropped = Rule{"dropped-connection", `contracts/PROTOCOL.md Part B: "When the server drops a port's connection, a request that meets the loss may answer INTERNAL; the port opens a new connection, which runs the handshake first, and within 30 s the session serves again, or answers the handshake's typed refusal"`}

// Chopped: a reply cut at any byte is read whole (chopped.go).
var Chopped = Rule{"replies-cut-anywhere", `contracts/PROTOCOL.md Part B: "Valkey's replies reach a port as a byte stream that may be cut at any byte, inside a bulk string or between its last byte and its CRLF: a port reads each reply whole however it is cut"`}

// BadLine: a line that is not a request is refused EMQARG under seq 0, and the session goes on
// (conversation.go).
var BadLine = Rule{"unreadable-line", `contracts/PROTOCOL.md Part B: "A request line that is not a JSON object with an unsigned integer seq — not JSON at all, JSON of another kind, an object without a seq — is answered … and changes nothing; the session goes on, and the next request is served": seq 0, ok false, error.type EMQARG`}

// InputEnded: a port whose input ends without close ends its session as close does (sessionend.go).
var InputEnded = Rule{"input-ended", `contracts/PROTOCOL.md Part B: "When its standard input ends without a close (the kit was interrupted, or has given up on the session), a port ends its session as close does: a park in flight ends at once, without waiting out its timeout_ms (nobody is left to read its reply, which the port may print or not), the minter lease is released, and the port exits with status 0"`}

// ConnectionsClosed: a port keeps no connection past its use (sessionend.go).
var ConnectionsClosed = Rule{"connections-closed", `contracts/PROTOCOL.md Part B park: "The parking connections are the park's own: when the park answers, the port closes them (a later park opens its own)"; close: "release the minter lease, close, exit 0"`}

// ConnectionsKept: a port closes no healthy connection of its own accord (sessionend.go).
var ConnectionsKept = Rule{"connections-kept", `contracts/PROTOCOL.md Part B reconnect: "While the server answers, a port keeps the connections its session opened: it closes one only on a loss (B-282, B-290), a reconnect, the end of a park (its own lines) or close, never on a timer of its own"`}

// LateReply: a reply late by less than 5 s is waited for, whatever the quiet before its request
// (sessionend.go).
var LateReply = Rule{"late-reply", `contracts/PROTOCOL.md Part B reconnect: "A late reply is no silence: until 5 s have passed since a request was sent on a connection, the server's silence on it is no loss, however long the connection was quiet before the request"`}

// RefusedClosed: a connection whose handshake failed is closed, and a refused session keeps
// none (dropped.go).
var RefusedClosed = Rule{"refused-closed", `contracts/PROTOCOL.md Part B reconnect: "A connection whose handshake fails (its HELLO 2 or its fence answered an error) is closed by the port at once, and a later attempt dials a new one: a session that its redial's refusal ended keeps no connection to the server"`}

// RedialOnce: a redial replaces what was lost and stops; no connection is opened beside the
// session's own (sessionend.go).
var RedialOnce = Rule{"redial-once", `contracts/PROTOCOL.md Part B reconnect: "A redial replaces each lost connection once: when its new connection has passed the handshake the port dials no more, and while the server answers it opens no connection beside those its session holds, a park's own lines aside"`}

// BadLineInTurn: a line that is not a request is answered in its turn among requests in flight
// (conversation.go).
var BadLineInTurn = Rule{"unreadable-line-in-turn", `contracts/PROTOCOL.md Part B: "Its reply comes in its turn, as a request's would: after the replies to every request read before it, before those read after it"`}
