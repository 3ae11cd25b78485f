package ids

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/echomq/kit/reference/wait"
)

// Leaser is the store of worker-id leases, `{emq}:minter:<w>` on the server (keys.Minter). The
// bus implements it with the connector and no script, on Valkey ≥ 8.1:
//
//	Acquire: SET {emq}:minter:<w> <owner> NX PX <ttl>        (OK → true, nil → false)
//	Renew:   SET {emq}:minter:<w> <owner> IFEQ <owner> PX <ttl> (OK only while owner holds it)
//	Release: SET {emq}:minter:<w> <owner> IFEQ <owner> PX 1     (lapses at once; no-op if not held)
type Leaser interface {
	Acquire(ctx context.Context, worker int, owner string, ttl time.Duration) (bool, error)
	Renew(ctx context.Context, worker int, owner string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, worker int, owner string) error
}

// Minter errors, for errors.Is.
var (
	// ErrLeaseLost: the worker-id lease was lost or may have expired; the minter mints no more.
	ErrLeaseLost = errors.New("ids: minter lease lost")
	// ErrNoWorker: every worker id 0–1023 is leased by someone else.
	ErrNoWorker = errors.New("ids: no free minter worker id")
	// ErrClosed: Next after Close.
	ErrClosed = errors.New("ids: minter closed")
	// ErrClock: the clock reads before the epoch or beyond the 42-bit millisecond field.
	ErrClock = errors.New("ids: clock outside the snowflake range")
)

// DefaultTTL is the lease time when Options.TTL is zero.
const DefaultTTL = 30 * time.Second

// Options tune a Minter. The zero value is ready for production.
type Options struct {
	// TTL of the worker-id lease; renewed every TTL/3. Zero means DefaultTTL.
	TTL time.Duration
	// Owner is the lease's owner token. Empty means 16 random bytes in hex.
	Owner string
	// Now is the clock the snowflake's milliseconds come from. Nil means time.Now. Lease expiry is
	// always judged on the process's monotonic clock, whatever this says.
	Now func() time.Time
	// Start picks the first worker id to try, given 1024. Nil means uniformly random.
	Start func(n int) int
	// After is a snowflake every id must stay above (a re-lease's floor: the last id minted
	// under an earlier lease), its millisecond taken as the last one used, so that a clock
	// behind it mints from there (A11) instead of waiting for the clock to catch up. Zero: none.
	After uint64
}

// Minter mints strictly increasing snowflakes under a leased worker id. Safe for concurrent use.
type Minter struct {
	leaser Leaser
	worker int
	owner  string
	ttl    time.Duration
	now    func() time.Time

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

// NewMinter leases a free worker id, trying each of 0–1023 once from a random offset, and keeps
// it renewed in the background until Close.
func NewMinter(ctx context.Context, leaser Leaser, opts Options) (*Minter, error) {
	if leaser == nil {
		return nil, errors.New("ids: NewMinter needs a Leaser")
	}
	m := &Minter{leaser: leaser, owner: opts.Owner, ttl: opts.TTL, now: opts.Now}
	if m.ttl == 0 {
		m.ttl = DefaultTTL
	}
	if m.ttl < 3*time.Millisecond {
		return nil, fmt.Errorf("ids: lease ttl %v too short", m.ttl)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.owner == "" {
		var b [16]byte
		if _, err := cryptorand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("ids: owner token: %w", err)
		}
		m.owner = hex.EncodeToString(b[:])
	}
	start := rand.IntN(MaxWorker + 1)
	if opts.Start != nil {
		start = ((opts.Start(MaxWorker+1) % (MaxWorker + 1)) + MaxWorker + 1) % (MaxWorker + 1)
	}
	m.worker = -1
	for i := 0; i <= MaxWorker && m.worker < 0; i++ {
		w := (start + i) % (MaxWorker + 1)
		asked := time.Now()
		ok, err := leaser.Acquire(ctx, w, m.owner, m.ttl)
		if err != nil {
			return nil, fmt.Errorf("ids: acquire worker %d: %w", w, err)
		}
		if ok {
			m.worker, m.validTo = w, asked.Add(m.ttl)
			break
		}
	}
	if m.worker < 0 {
		return nil, ErrNoWorker
	}
	if opts.After != 0 {
		m.floor(opts.After)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel, m.done = cancel, make(chan struct{})
	go m.renew(rctx)
	return m, nil
}

// floor takes after's millisecond as the last one minted: under the same worker id the sequence
// goes on from after's; under a higher one it starts again, every id of that millisecond sorting
// above after; under a lower one each would sort below, so the next id waits for the clock's
// next millisecond, as a spent sequence does.
func (m *Minter) floor(after uint64) {
	ms, w, seq := Split(after)
	m.started, m.lastMs = true, ms
	switch {
	case m.worker == w:
		m.seq = seq
	case m.worker > w:
		m.seq = -1
	default:
		m.seq = MaxSequence
	}
}

// Worker is the leased worker id.
func (m *Minter) Worker() int { return m.worker }

// Owner is the lease's owner token.
func (m *Minter) Owner() string { return m.owner }

// renew extends the lease every ttl/3. A refused renewal marks the lease lost; a failed one is
// retried next tick, and minting stops on its own once validTo passes.
func (m *Minter) renew(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(m.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
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
		case !ok:
			m.lost = fmt.Errorf("%w: worker %d renewal refused", ErrLeaseLost, m.worker)
		case m.lost == nil && asked.Before(m.validTo):
			m.validTo = asked.Add(m.ttl)
		default:
			// Renewed after validTo passed: someone else may have minted under this id meanwhile.
			if m.lost == nil {
				m.lost = fmt.Errorf("%w: worker %d lease lapsed before renewal", ErrLeaseLost, m.worker)
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
func (m *Minter) Reaffirm(ctx context.Context) error {
	asked := time.Now()
	ok, err := m.leaser.Renew(ctx, m.worker, m.owner, m.ttl)
	if err != nil {
		return fmt.Errorf("ids: reaffirm worker %d: %w", m.worker, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case !ok:
		if m.lost == nil {
			m.lost = fmt.Errorf("%w: worker %d renewal refused at reconnect", ErrLeaseLost, m.worker)
		}
	case m.lost == nil && asked.Before(m.validTo):
		m.validTo = asked.Add(m.ttl)
	}
	return m.usable()
}

// Next mints a JOB id.
func (m *Minter) Next(ctx context.Context) (string, error) {
	sf, err := m.NextSnowflake(ctx)
	if err != nil {
		return "", err
	}
	return Encode(BrandJob, sf), nil
}

// NextSnowflake mints a snowflake strictly greater than every one this minter minted before. Past
// 4095 in one millisecond it waits for the clock's next millisecond; a clock that steps back is
// read as the last millisecond minted.
func (m *Minter) NextSnowflake(ctx context.Context) (uint64, error) {
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
		if !m.started || ms > m.lastMs {
			m.started, m.lastMs, m.seq = true, ms, 0
			return Compose(ms, m.worker, 0), nil
		}
		if m.seq < MaxSequence {
			m.seq++
			return Compose(m.lastMs, m.worker, m.seq), nil
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

// Err is why the minter mints no more (ErrClosed, ErrLeaseLost), or nil while it may mint, as
// its own record of the lease says: it asks nothing of the server.
func (m *Minter) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usable()
}

func (m *Minter) usable() error {
	switch {
	case m.closed:
		return ErrClosed
	case m.lost != nil:
		return m.lost
	case !time.Now().Before(m.validTo):
		m.lost = fmt.Errorf("%w: worker %d lease expired unrenewed", ErrLeaseLost, m.worker)
		return m.lost
	}
	return nil
}

func (m *Minter) millis() (uint64, error) {
	d := m.now().Sub(Epoch)
	if d < 0 || d.Milliseconds() > MaxMillis {
		return 0, fmt.Errorf("%w: %v", ErrClock, m.now())
	}
	return uint64(d.Milliseconds()), nil
}

// Close stops the renewal, waits for it to end and releases the lease. Idempotent.
func (m *Minter) Close() error {
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
