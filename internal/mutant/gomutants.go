package mutant

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/fence"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/wait"
)

// goMutants break the port's Go side: the handshake, the minter, the key builder, the consumer,
// the payload codec. Each is built from a seam of the bus (bus.Seams) or a wrapper of the
// driver (hostside.go); the bus itself holds no defect.
var goMutants = []Spec{
	{Name: "fence-late", Contract: "C01", Rule: "wire-fence-first", Defect: "the handshake takes a minter lease (SET NX) before the bundle fence runs",
		Go: seams(func(s *bus.Seams) { s.Handshake = leaseBeforeFence })},
	{Name: "no-refence", Contract: "C01", Rule: "reconnect", Defect: "a reconnect skips the fence",
		Go: seams(func(s *bus.Seams) { s.Handshake = fenceOnce })},
	{Name: "wrong-kind-accepted", Contract: "C01", Rule: "server", Defect: "a server that is not Valkey >= 8.1 standalone is admitted",
		AllowEngine: true},
	{Name: "eval-edited", Contract: "C02", Rule: "wire-evalsha", Defect: "enqueue sends EVAL of an edited source instead of EVALSHA of the bundle's",
		Go: seams(func(s *bus.Seams) { s.Hook = chain(s.Hook, evalEdited()) })},
	{Name: "complete-loose-del", Contract: "C07", Rule: "wire-evalsha", Defect: "complete is sent as a loose DEL of the job's row instead of the complete script: the row goes, the active entry, checkpoint and last error stay, and no token is compared",
		Go: seams(func(s *bus.Seams) { s.Hook = chain(s.Hook, completeLooseDel()) })},
	{Name: "argv-key", Contract: "C02", Rule: "wire-declared-keys", Defect: "enqueue writes the row under a key built from a prefix passed in ARGV (the seed's defect) instead of its declared KEYS[1]",
		Edits: argvKeyEdits,
		Go:    seams(func(s *bus.Seams) { s.Hook = chain(s.Hook, argvRowPrefix()) })},
	{Name: "lax-queue-name", Contract: "C04", Rule: "key-builder", Defect: "the key builder sends a queue or lane name outside the grammar",
		Go: laxNames},
	{Name: "lax-id-brand", Contract: "C04", Rule: "key-builder", Defect: "the key builder accepts a well-formed id of another brand",
		Go: laxBrands},
	{Name: "lax-id-length", Contract: "C04", Rule: "key-builder", Defect: "the key builder sends an id of the wrong length (not 14 bytes) to the server",
		Go: laxID("length")},
	{Name: "lax-id-alphabet", Contract: "C04", Rule: "key-builder", Defect: "the key builder sends an id with a digit outside the base62 alphabet to the server",
		Go: laxID("alphabet")},
	{Name: "lax-id-above-largest", Contract: "C04", Rule: "key-builder", Defect: "the key builder sends an id whose 11 digits are above the largest snowflake LygHa16AHYF to the server",
		Go: laxID("above-largest")},
	{Name: "lax-id-brand-case", Contract: "C04", Rule: "key-builder", Defect: "the key builder sends an id whose brand is not three capitals (job…, Job…, @OB…) to the server",
		Go: laxID("brand-case")},
	{Name: "minter-repeats", Contract: "C05", Rule: "mint-order", Defect: "the minter restarts its sequence at every call: ids repeat within one millisecond",
		Go: seams(func(s *bus.Seams) { s.Minter = repeatingMinter })},
	{Name: "client-clock-lease", Contract: "C06", Rule: "clock", Defect: "claim sends an instant from the client's clock and the script stores it as the deadline",
		Edits: clientClockEdits,
		Go:    seams(func(s *bus.Seams) { s.Hook = chain(s.Hook, clientClockLease()) })},
	{Name: "poll-park", Contract: "C14", Rule: "park", Defect: "an idle consumer polls claim every 5 ms instead of blocking on the wake key",
		Go: seams(func(s *bus.Seams) { s.Park = pollPark })},
	{Name: "argv-row-id", Contract: "C07", Rule: "wire-argv-id", Defect: "extend declares the queue's meta key where the job's row key belongs and its script finds the row from the id in ARGV: KEYS[] and ARGV no longer name the same job",
		Edits: argvIDEdits,
		Go:    seams(func(s *bus.Seams) { s.Hook = chain(s.Hook, argvRowID()) })},
	{Name: "noscript-reload-crlf", Contract: "C06", Rule: "noscript", Defect: "on NOSCRIPT the port reloads a script from a second copy with CRLF line endings, not its exact source: the server answers another SHA1 and the op fails instead of retrying",
		Go: seams(func(s *bus.Seams) { s.Hook = chain(s.Hook, reloadCRLF()) })},
	{Name: "info-banner", Contract: "C01", Rule: "wire-commands", Defect: "after the fence, every connection reads INFO server to log the server's build and uptime: a command outside A4",
		Go: seams(func(s *bus.Seams) { s.Handshake = infoAfterFence })},
	{Name: "minter-key-strlen", Contract: "C01", Rule: "wire-commands", Defect: "after the fence, every connection probes the lease key {emq}:minter:1023 with STRLEN: a command outside A4's list for the minter keys",
		Go: seams(func(s *bus.Seams) { s.Handshake = strlenMinterAfterFence })},
	{Name: "payload-utf8", Contract: "C06", Rule: "claim", Defect: "the port passes a claimed payload through a UTF-8 string: invalid bytes come back as U+FFFD",
		Go: payloadUTF8},
	{Name: "morgue-limit-unbounded", Contract: "C07", Rule: "A16-limit", Defect: "morgue takes any limit: 10001 lists the first 10000 dead jobs instead of EMQARG",
		Go: morgueAnyLimit},
	{Name: "park-by-consumer", Contract: "C14", Rule: "park-consumer", Defect: "park lists its completions grouped by consumer (each consumer's list in turn) instead of in completion order",
		Go: parkByConsumer},
	{Name: "park-maintains-while-idle", Contract: "C14", Rule: "park", Defect: "the park op's consumer runs a maintenance pass (promote, then reap) every half lease while it runs, idle or not: polling (make mutation's survivor consumer.go Maintain, seed 51842)",
		Go: parkMaintains},
	{Name: "claim-after-timeout", Contract: "C14", Rule: "park", Defect: "a parked consumer goes back to claim when its blocking pop times out, not only on a wake token",
		Go: seams(func(s *bus.Seams) { s.Park = claimAfterTimeout })},
	{Name: "wake-taken-for-timeout", Contract: "C14", Rule: "park", Defect: "a parked consumer takes a popped wake token for a timed-out pop and parks again without claiming: work enqueued while it parks waits",
		Go: seams(func(s *bus.Seams) { s.Park = wakeTakenForTimeout })},
	{Name: "park-line-pinged", Contract: "C14", Rule: "park", Defect: "a parking line left quiet for 3 s after its pop answered (its worker away claiming and settling) gets a PING: a health check of the port's own on a line used for nothing but BLPOP (red team 56's go-park-line-health-ping)",
		Go: seams(func(s *bus.Seams) { s.Park = pingedPark() })},
	{Name: "pop-read-timeout-10s", Contract: "C14", Rule: "connections-kept", Defect: "the parking line reads with a fixed 10 s socket timeout, whatever its pop's: a pop longer than that is taken for a silent server and its line replaced mid-pop (make mutation's gap conn.go blockingTimeout, a pop's reply due at once)",
		Go: seams(func(s *bus.Seams) { s.Park = shortReadPark })},
	{Name: "socket-leaked-per-connect", Contract: "C14", Rule: "connections-closed", Defect: "every connection the bus opens comes with a second one, fenced the same way and never closed: a socket leaked per connect and per reconnect, as a redial that replaces a healthy socket and forgets the old one leaks it (make mutation's survivor conn.go publish, seed 97903)",
		Go: seams(func(s *bus.Seams) { s.Handshake = leakPerConnect() })},
	{Name: "extend-deadline-seconds", Contract: "C07", Rule: "extend-deadline", Defect: "extend answers deadline_ms in seconds (the new deadline divided by 1000), as a port that hands on a Unix-seconds time",
		Go: front(func(d drivers.Driver) drivers.Driver { return extendSecondsFront{d} })},
	{Name: "lax-key-op", Contract: "C04", Rule: "key-builder", Defect: "the key op checks the type but writes any queue name into the key as given: a bad name gets a key instead of EMQKEY",
		Go: front(func(d drivers.Driver) drivers.Driver { return laxKeyFront{d} })},
}

// front is a Go mutant that only wraps the port's sessions: a defect of the port's own answers.
func front(w Wrap) func(*bus.Options) Wrap {
	return func(*bus.Options) Wrap { return w }
}

// seams is a Go mutant that only installs seams of the bus.
func seams(set func(*bus.Seams)) func(*bus.Options) Wrap {
	return func(opt *bus.Options) Wrap {
		set(&opt.Test)
		return nil
	}
}

// leaseBeforeFence checks the server, then leases the last minter worker id with SET NX, and
// only then runs the canonical handshake's fence.
func leaseBeforeFence(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
	full := fence.OnConnect(canon, opt)
	return func(ctx context.Context, c *connector.Conn) error {
		if err := fence.Check(c.Server(), opt); err != nil {
			return err
		}
		k, err := keys.Minter(ids.MaxWorker)
		if err != nil {
			return err
		}
		if _, err := c.Do(ctx, "SET", k, "early", "NX", "PX", 30000); err != nil {
			return err
		}
		return full(ctx, c)
	}
}

// leakPerConnect runs the canon's handshake on each connection and opens another beside it,
// fenced too, that nothing ever closes (kept holds it, so no finalizer closes it either).
func leakPerConnect() func(*lua.Bundle, fence.Options) func(context.Context, *connector.Conn) error {
	var mu sync.Mutex
	var kept []*connector.Conn
	return func(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
		full := fence.OnConnect(canon, opt)
		return func(ctx context.Context, c *connector.Conn) error {
			if err := full(ctx, c); err != nil {
				return err
			}
			extra, err := connector.Dial(ctx, c.Addr(), connector.Options{OnConnect: full})
			if err != nil {
				return err
			}
			mu.Lock()
			kept = append(kept, extra)
			mu.Unlock()
			return nil
		}
	}
}

// fenceOnce runs the handshake at a connection's first connect only; its reconnects trust it.
func fenceOnce(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
	full := fence.OnConnect(canon, opt)
	var fenced atomic.Bool
	return func(ctx context.Context, c *connector.Conn) error {
		if fenced.Load() {
			return nil
		}
		if err := full(ctx, c); err != nil {
			return err
		}
		fenced.Store(true)
		return nil
	}
}

// repeatingMinter leases a worker id like the canon's minter but always mints sequence 0, so
// two ids minted within one millisecond are equal.
func repeatingMinter(ctx context.Context, l ids.Leaser, opt ids.Options) (bus.Minter, error) {
	m, err := ids.NewMinter(ctx, l, opt)
	if err != nil {
		return nil, err
	}
	return repeater{m}, nil
}

type repeater struct{ m *ids.Minter }

func (r repeater) Next(ctx context.Context) (string, error) {
	if _, err := r.m.NextSnowflake(ctx); err != nil { // keeps the lease checks honest
		return "", err
	}
	ms := uint64(time.Since(ids.Epoch).Milliseconds())
	return ids.Encode(ids.BrandJob, ids.Compose(ms, r.m.Worker(), 0)), nil
}

func (r repeater) Close() error { return r.m.Close() }

// keepingMinter is the canon's minter over a leaser whose Release does nothing.
func keepingMinter(ctx context.Context, l ids.Leaser, opt ids.Options) (bus.Minter, error) {
	return ids.NewMinter(ctx, keepLease{l}, opt)
}

type keepLease struct{ ids.Leaser }

func (keepLease) Release(context.Context, int, string) error { return nil }

// pingedPark pops as the canon says, but a line left quiet 3 s after its pop answered (its
// worker away claiming and settling) gets a PING, as from a watcher that checks every idle
// connection.
func pingedPark() func(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (bool, error) {
	var mu sync.Mutex
	watch := map[*connector.Conn]*time.Timer{}
	return func(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (bool, error) {
		mu.Lock()
		if w := watch[c]; w != nil {
			w.Stop()
		}
		mu.Unlock()
		v, err := c.DoBlocking(ctx, timeout, cmd...)
		mu.Lock()
		watch[c] = time.AfterFunc(3*time.Second, func() { _, _ = c.Do(context.Background(), "PING") })
		mu.Unlock()
		return err == nil && !v.Null, err
	}
}

// pollPark sends nothing while "parked": it sleeps 5 ms and reports a wake, so the worker
// claims again: a poll.
func pollPark(ctx context.Context, _ *connector.Conn, _ time.Duration, _ []any) (bool, error) {
	if err := wait.Sleep(ctx, 5*time.Millisecond); err != nil {
		return false, err
	}
	return true, nil
}

// wakeTakenForTimeout pops as the canon says but reports no wake, token or not.
func wakeTakenForTimeout(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (bool, error) {
	_, err := c.DoBlocking(ctx, timeout, cmd...)
	return false, err
}

// shortReadPark pops as the canon says, but its read gives up 10 s in (8 s and the connector's
// 2 s of slack), as a client with one socket timeout for every command.
func shortReadPark(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (bool, error) {
	v, err := c.DoBlocking(ctx, min(timeout, 8*time.Second), cmd...)
	return err == nil && !v.Null, err
}

// claimAfterTimeout pops as the canon says but takes a timed-out pop for a wake.
func claimAfterTimeout(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (bool, error) {
	_, err := c.DoBlocking(ctx, timeout, cmd...)
	return err == nil, err
}
