package mutant

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/wait"
)

// faultyMinter is a copy of the reference minter (reference/ids.Minter) with switches for
// deliberate defects: plain mistakes a port author could make in a minter. The bus takes it
// through its Minter seam (bus.Seams.Minter, see faulty); the reference minter holds no defect.
// Without a defect it mints strictly increasing snowflakes under a leased worker id, exactly as
// the reference does (minter_test.go holds the copy to it: same ids from the same clock, same
// lease calls, same failures). Safe for concurrent use.
type faultyMinter struct {
	leaser ids.Leaser
	worker int
	owner  string
	ttl    time.Duration
	now    func() time.Time
	defect minterDefects
	probe  atomic.Bool // NoFloor: the next call is the bus's floor skip, answered above all

	mu       sync.Mutex
	lastMs   uint64
	seq      int
	started  bool
	validTo  time.Time // monotonic: when the lease may have expired, absent a renewal
	lost     error     // set once the lease is known lost; sticky
	closed   bool
	cancel   context.CancelFunc
	done     chan struct{}
	closeErr error
	once     sync.Once
}

// newFaultyMinter leases a free worker id, trying each of 0–1023 once from a random offset, and keeps
// it renewed in the background until Close.
func newFaultyMinter(ctx context.Context, leaser ids.Leaser, opts ids.Options, defect minterDefects) (*faultyMinter, error) {
	if leaser == nil {
		return nil, errors.New("mutant: newFaultyMinter needs a Leaser")
	}
	m := &faultyMinter{leaser: leaser, owner: opts.Owner, ttl: opts.TTL, now: opts.Now, defect: defect}
	if m.ttl == 0 {
		m.ttl = ids.DefaultTTL
	}
	if m.ttl < 3*time.Millisecond {
		return nil, fmt.Errorf("ids: lease ttl %v too short", m.ttl)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.owner == "" && m.defect.FixedOwner {
		m.owner = "emq-minter"
	}
	if m.owner == "" {
		var b [16]byte
		if _, err := cryptorand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("ids: owner token: %w", err)
		}
		m.owner = hex.EncodeToString(b[:])
	}
	start := rand.IntN(ids.MaxWorker + 1)
	if opts.Start != nil {
		start = ((opts.Start(ids.MaxWorker+1) % (ids.MaxWorker + 1)) + ids.MaxWorker + 1) % (ids.MaxWorker + 1)
	}
	m.worker = -1
	if m.defect.Guess {
		m.worker, m.validTo = start, time.Now().Add(m.ttl)
	}
	span := ids.MaxWorker + 1
	if m.defect.ShortScan {
		span = ids.MaxWorker
	}
	for i := 0; i <= ids.MaxWorker && m.worker < 0; i++ {
		w := (start + i) % span
		asked := time.Now()
		ok, err := leaser.Acquire(ctx, w, m.owner, m.ttl)
		if err != nil {
			return nil, fmt.Errorf("ids: acquire worker %d: %w", w, err)
		}
		if ok || m.defect.Squat {
			m.worker, m.validTo = w, asked.Add(m.ttl)
			break
		}
	}
	if m.worker < 0 {
		return nil, ids.ErrNoWorker
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel, m.done = cancel, make(chan struct{})
	go m.renew(rctx)
	return m, nil
}

// Worker is the leased worker id.
func (m *faultyMinter) Worker() int { return m.worker }

// Owner is the lease's owner token.
func (m *faultyMinter) Owner() string { return m.owner }

// renew extends the lease every ttl/3. A refused renewal marks the lease lost; a failed one is
// retried next tick, and minting stops on its own once validTo passes.
func (m *faultyMinter) renew(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(m.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.defect.NoRenew || m.defect.Guess {
			continue
		}
		asked := time.Now()
		cctx, cancel := context.WithTimeout(ctx, m.ttl/3)
		ok, err := m.leaser.Renew(cctx, m.worker, m.owner, m.ttl)
		cancel()
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		switch {
		case err != nil:
			// Transient: validTo still bounds how long we may mint.
		case !ok && m.defect.IgnoreLoss:
			m.validTo = asked.Add(m.ttl)
		case !ok:
			m.lost = fmt.Errorf("%w: worker %d renewal refused", ids.ErrLeaseLost, m.worker)
		case m.lost == nil && asked.Before(m.validTo):
			m.validTo = asked.Add(m.ttl)
		default:
			// Renewed after validTo passed: someone else may have minted under this id meanwhile.
			if m.lost == nil {
				m.lost = fmt.Errorf("%w: worker %d lease lapsed before renewal", ids.ErrLeaseLost, m.worker)
			}
		}
		lost := m.lost != nil
		m.mu.Unlock()
		if lost {
			return
		}
	}
}

// Reaffirm renews the lease at once, on the server: a reconnect's duty (A9), since the lease
// may have been lost while the connection was down. A refused renewal marks the minter lost.
func (m *faultyMinter) Reaffirm(ctx context.Context) error {
	if m.defect.NoRenew || m.defect.Guess {
		return nil
	}
	if m.defect.TrustLocal {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.usable()
	}
	asked := time.Now()
	ok, err := m.leaser.Renew(ctx, m.worker, m.owner, m.ttl)
	if err != nil {
		return fmt.Errorf("ids: reaffirm worker %d: %w", m.worker, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case !ok && !m.defect.IgnoreLoss:
		if m.lost == nil {
			m.lost = fmt.Errorf("%w: worker %d renewal refused at reconnect", ids.ErrLeaseLost, m.worker)
		}
	case m.lost == nil && asked.Before(m.validTo):
		m.validTo = asked.Add(m.ttl)
	}
	return m.usable()
}

// Next mints a JOB id.
func (m *faultyMinter) Next(ctx context.Context) (string, error) {
	if m.probe.Swap(false) {
		return ids.Encode(ids.BrandJob, ids.Compose(ids.MaxMillis, ids.MaxWorker, ids.MaxSequence)), nil
	}
	sf, err := m.NextSnowflake(ctx)
	if err != nil {
		return "", err
	}
	return m.defect.encode(sf), nil
}

// NextSnowflake mints a snowflake strictly greater than every one this minter minted before. Past
// 4095 in one millisecond it waits for the clock's next millisecond; a clock that steps back is
// read as the last millisecond minted.
func (m *faultyMinter) NextSnowflake(ctx context.Context) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if err := m.usable(); err != nil {
			return 0, err
		}
		ms, err := m.millis()
		if err != nil {
			return 0, err
		}
		if m.defect.StepBack && m.started && ms < m.lastMs {
			m.lastMs, m.seq = ms, 0
			return ids.Compose(ms, m.worker, 0), nil
		}
		if !m.started || ms > m.lastMs {
			m.started, m.lastMs, m.seq = true, ms, 0
			return ids.Compose(ms, m.worker, 0), nil
		}
		if m.seq < ids.MaxSequence {
			m.seq++
			return ids.Compose(m.lastMs, m.worker, m.seq), nil
		}
		switch {
		case m.defect.SeqWrap:
			m.seq = 0
			return ids.Compose(m.lastMs, m.worker, 0), nil
		case m.defect.SeqBorrow:
			m.lastMs, m.seq = m.lastMs+1, 0
			return ids.Compose(m.lastMs, m.worker, 0), nil
		case m.defect.SeqCarry:
			m.seq++
			return m.lastMs<<(ids.WorkerBits+ids.SequenceBits) | uint64(m.worker)<<ids.SequenceBits + uint64(m.seq), nil
		}
		// The sequence is spent: wait for the clock's next millisecond without holding the
		// lock, so that the renewal can record itself meanwhile (a long wait must not lapse a
		// lease that is being renewed), then look at everything again.
		m.mu.Unlock()
		err = wait.Sleep(ctx, time.Millisecond/4)
		m.mu.Lock()
		if err != nil {
			return 0, err
		}
	}
}

func (m *faultyMinter) usable() error {
	switch {
	case m.closed:
		return ids.ErrClosed
	case m.lost != nil:
		return m.lost
	case !m.defect.NoRenew && !m.defect.Guess && !m.defect.NoLocalExpiry && !time.Now().Before(m.validTo):
		m.lost = fmt.Errorf("%w: worker %d lease expired unrenewed", ids.ErrLeaseLost, m.worker)
		return m.lost
	}
	return nil
}

func (m *faultyMinter) millis() (uint64, error) {
	d := m.now().Sub(m.defect.epoch())
	if d < 0 || d.Milliseconds() > ids.MaxMillis {
		return 0, fmt.Errorf("%w: %v", ids.ErrClock, m.now())
	}
	return uint64(d.Milliseconds()), nil
}

// Close stops the renewal, waits for it to end and releases the lease. Idempotent.
func (m *faultyMinter) Close() error {
	m.once.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		m.cancel()
		<-m.done
		ctx, cancel := context.WithTimeout(context.Background(), max(m.ttl/3, time.Second))
		defer cancel()
		if err := m.leaser.Release(ctx, m.worker, m.owner); err != nil {
			m.closeErr = fmt.Errorf("ids: release worker %d: %w", m.worker, err)
		}
	})
	return m.closeErr
}

// minterDefects are deliberate minter defects, each one a mutant of the reference port
// (catalogue_c02.go, catalogue_c05.go): plain mistakes a port author could make in the minter.
// The zero value is the reference minter's behaviour.
type minterDefects struct {
	StepBack   bool // a clock that steps back is minted from as read: ids decrease
	SeqWrap    bool // past 4095 ids in one millisecond the sequence wraps to 0 instead of waiting
	SeqCarry   bool // past 4095 the sequence carries into the worker bits instead of waiting
	SeqBorrow  bool // past 4095 the minter moves to the next millisecond at once, ahead of its clock
	UnixEpoch  bool // the millisecond field counts from 1970, not from 2024-01-01
	LowerFirst bool // base62 with the lower-case letters before the capitals (0-9a-zA-Z)
	SwapFields bool // the layout puts the sequence above the worker id: ms | seq | worker
	NoPad      bool // the base62 body is not left-padded with 0 to 11 characters
	Guess      bool // the worker id is picked at random and never leased (nor renewed)
	// NoFloor: the minter that replaces a lost one after a reconnect does not skip past the last
	// id minted, so within that millisecond a lower worker id mints smaller ids. The bus skips
	// ahead by minting until it passes its last id; a replacement minter with this defect
	// answers that first call with an id above every other (the bus discards it), so the skip
	// stops at once: as if the bus had none.
	NoFloor bool
	// TrustLocal: at a reconnect the minter trusts its own record of the lease instead of
	// renewing it on the server (the reference's own defect before the lease clauses).
	TrustLocal bool
	// FixedOwner: every minter leases under the same owner token (as with a host name for a
	// token), so one minter's renewal also renews another's lease on the same worker id.
	FixedOwner bool
	Squat      bool // a nil reply to SET … NX is taken for success: the minter mints under a taken worker id
	NoRenew    bool // the lease is never renewed, and the minter mints on after it lapsed
	IgnoreLoss bool // a refused renewal is not noticed: the minter mints on under a lost worker id
	// NoLocalExpiry: the minter keeps no clock of its own on the lease; a lease whose renewals
	// hang is trusted until the server refuses one.
	NoLocalExpiry bool
	// ShortScan: the scan for a free worker id wraps modulo 1023, so worker id 1023 is never
	// tried (an off-by-one in the range 0–1023).
	ShortScan bool
}

// lowerFirst is the LowerFirst defect's alphabet: not in ASCII order.
const lowerFirst = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// encode renders a JOB id, with the LowerFirst defect's alphabet and the SwapFields defect's
// layout when they are on.
func (d minterDefects) encode(sf uint64) string {
	if d.SwapFields {
		ms, worker, seq := ids.Split(sf)
		sf = ms<<(ids.WorkerBits+ids.SequenceBits) | uint64(seq)<<ids.WorkerBits | uint64(worker)
	}
	if d.NoPad {
		id := ids.Encode(ids.BrandJob, sf)
		if body := strings.TrimLeft(id[ids.BrandLen:], "0"); body != "" {
			return ids.BrandJob + body
		}
		return ids.BrandJob + "0"
	}
	if !d.LowerFirst {
		return ids.Encode(ids.BrandJob, sf)
	}
	var b [ids.BodyLen]byte
	for i := ids.BodyLen - 1; i >= 0; i-- {
		b[i] = lowerFirst[sf%62]
		sf /= 62
	}
	return ids.BrandJob + string(b[:])
}

// epoch is the zero of the millisecond field (the Unix epoch under the UnixEpoch defect).
func (d minterDefects) epoch() time.Time {
	if d.UnixEpoch {
		return time.Unix(0, 0)
	}
	return ids.Epoch
}

// faulty is a Go mutant whose bus mints through a faultyMinter with the defects d.
func faulty(d minterDefects) func(*bus.Options) Wrap {
	return func(opt *bus.Options) Wrap {
		var mu sync.Mutex
		seen := map[ids.Leaser]bool{} // each bus's leaser: its second minter is a replacement
		opt.Test.Minter = func(ctx context.Context, l ids.Leaser, o ids.Options) (bus.Minter, error) {
			m, err := newFaultyMinter(ctx, l, o, d)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			m.probe.Store(d.NoFloor && seen[l])
			seen[l] = true
			mu.Unlock()
			return m, nil
		}
		return nil
	}
}

// releaseAny turns the minter's compare-and-release (SET {emq}:minter:<w> <owner> IFEQ <owner>
// PX 1) into a DEL of the lease key, whoever holds it.
func releaseAny() connector.Hook {
	return func(args []any) []any {
		if len(args) == 7 && strings.EqualFold(text(args[0]), "SET") && strings.HasPrefix(text(args[1]), "{emq}:minter:") &&
			strings.EqualFold(text(args[3]), "IFEQ") && strings.EqualFold(text(args[5]), "PX") && text(args[6]) == "1" {
			return []any{"DEL", args[1]}
		}
		return args
	}
}
