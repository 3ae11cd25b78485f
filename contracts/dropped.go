package contracts

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// Connections the server drops (contracts/PROTOCOL.md B-282): every other clause loses a port's
// connection only by the port's own reconnect op. Here the server closes them under the port,
// as a restart or a failover does, twice: once to be redialled with the handshake, once after
// the deployment changed, so that the redial's fence fails and the session must be refused with
// the fence's typed error (§1.2-2, §5.2-2), never carry on or answer INTERNAL for ever.

var ruleDropped = Rule{"dropped-connection", `contracts/PROTOCOL.md Part B: "When the server drops a port's connection, a request that meets the loss may answer INTERNAL; the port opens a new connection, which runs the handshake first, and within 30 s the session serves again, or answers the handshake's typed refusal"`}

// connectionsDroppedByTheServer is C01's clause of the port's connections killed by the server.
func connectionsDroppedByTheServer(t *T) {
	t.enqueue("orders", "before")
	before, _ := byClient(t.portLines(0))
	m := t.mark()
	t.killPortConnections()
	err := t.afterDrop(nil)
	t.ok(err, ruleDropped, "an enqueue after the server dropped every connection of the port (retried while it answers INTERNAL, up to 30 s)")
	fresh := t.freshConnectionsFenced(m, before, ruleDropped, "drop")
	t.check(fresh > 0, ruleDropped, "a new connection after the drop, with the handshake first", "no new connection showed on the wire")
	// The deployment changes while the port is cut off: its redial's fence must refuse.
	sum := sha1.Sum([]byte("a bundle deployed during the drop"))
	t.do("HSET", keys.Bundle(), "digest", hex.EncodeToString(sum[:]))
	t.killPortConnections()
	err = t.afterDrop(emqerr.Version)
	t.refused(err, emqerr.Version, ruleDropped, "an enqueue after the server dropped the port's connections and another bundle was deployed")
}

// killPortConnections closes every connection of the port on the server that lists it (CLIENT
// KILL ID: ids are a node's own).
func (t *T) killPortConnections() {
	for _, nd := range t.admin.Nodes {
		for _, c := range t.portClients() {
			if c["node"] == nd.Label {
				if _, err := nd.C.Do(t.ctx, "CLIENT", "KILL", "ID", c["id"]); err != nil {
					t.harness("CLIENT KILL ID %s on %s: %v", c["id"], nd.Addr, err)
				}
			}
		}
	}
}

// afterDrop sends enqueues until one is answered other than INTERNAL (a request that met the
// loss, or one sent while the port redials with its backoff) or want, and returns that answer;
// after 30 s it returns the last one. A session whose conversation failed is not retried.
func (t *T) afterDrop(want *emqerr.Error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("after the drop")})
		var canon *emqerr.Error
		f, ok := t.D.(drivers.Faulter)
		if err == nil || errors.As(err, &canon) || (want != nil && errors.Is(err, want)) || (ok && f.Fault() != nil) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
