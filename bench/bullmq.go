package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SysBullMQ is BullMQ (Node.js, ioredis) on the same Valkey as the bus.
const SysBullMQ = "bullmq"

// errNotInProcess answers the per-call Queue methods of a system whose client lives in another
// process: the bench drives it through Driven instead.
var errNotInProcess = errors.New("bench: driven in its own process")

// Driven is a system whose client runs in another process (BullMQ in Node.js). Calling it once
// per job across a pipe would charge it for the hop, so it runs each scenario there, under the
// same rules: the same producers, batch, workers, offered rate and clock rules (intended send
// instant, handler start).
type Driven interface {
	RunEnqueue(ctx context.Context, producers, batch int, d time.Duration) (float64, error)
	RunLatency(ctx context.Context, rate float64, d time.Duration, workers, senders int) (LatencyResult, error)
	// PID is the client process, whose CPU is the client side's.
	PID() int
}

// BullMQQueue drives bench/bullmq/driver.js over JSON lines on stdio.
type BullMQQueue struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Reader
	mu       sync.Mutex
	Versions map[string]string
	Settings [][2]string
}

// NewBullMQQueue provisions the pinned BullMQ client (ci/provision-bullmq.sh) and starts the
// driver against the Valkey at addr. It returns an error naming what is missing when node or
// npm is not installed: the report then says BullMQ was not measured, and why.
func NewBullMQQueue(ctx context.Context, addr string) (*BullMQQueue, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("node is not installed (Node.js 20+ runs BullMQ)")
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(root, "ci", "provision-bullmq.sh")).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("provision BullMQ: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("provision BullMQ: %w", err)
	}
	mods := filepath.Join(strings.TrimSpace(string(out)), "node_modules")
	cmd := exec.Command("node", filepath.Join(root, "bench", "bullmq", "driver.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	cmd.Stderr = os.Stderr
	// Its own process group, killed with the bench (Pdeathsig) so no client outlives a run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	q := &BullMQQueue{cmd: cmd}
	if q.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	so, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	q.out = bufio.NewReaderSize(so, 1<<20)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the BullMQ driver: %w", err)
	}
	var h struct {
		BullMQ   string      `json:"bullmq"`
		IORedis  string      `json:"ioredis"`
		Node     string      `json:"node"`
		Settings [][2]string `json:"settings"`
	}
	if err := q.call(ctx, map[string]any{"op": "hello", "valkey": addr}, &h); err != nil {
		q.Close()
		return nil, err
	}
	q.Versions = map[string]string{"bullmq": h.BullMQ, "ioredis": h.IORedis, "node": h.Node}
	q.Settings = h.Settings
	return q, nil
}

// moduleRoot is the kit's checkout: the bench runs from it (make bench), or below it (go test).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "bench", "bullmq", "driver.js")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("bench/bullmq/driver.js not found above the working directory")
		}
		dir = parent
	}
}

// call sends one request and decodes the reply's result into res. One call at a time.
func (q *BullMQQueue) call(ctx context.Context, req map[string]any, res any) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := q.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bullmq driver: write %s: %w", req["op"], err)
	}
	type reply struct {
		line []byte
		err  error
	}
	done := make(chan reply, 1)
	go func() {
		line, err := q.out.ReadBytes('\n')
		done <- reply{line, err}
	}()
	var r reply
	select {
	case r = <-done:
	case <-ctx.Done():
		q.kill()
		return fmt.Errorf("bullmq driver: %s: %w", req["op"], ctx.Err())
	}
	if r.err != nil {
		return fmt.Errorf("bullmq driver: %s: the driver stopped answering: %w", req["op"], r.err)
	}
	var env struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(r.line, &env); err != nil {
		return fmt.Errorf("bullmq driver: %s: not a reply: %q", req["op"], r.line)
	}
	if !env.OK {
		return fmt.Errorf("bullmq driver: %s: %s", req["op"], env.Error)
	}
	if res == nil {
		return nil
	}
	return json.Unmarshal(env.Result, res)
}

func (q *BullMQQueue) kill() {
	if q.cmd.Process != nil {
		_ = syscall.Kill(-q.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (q *BullMQQueue) Name() string   { return SysBullMQ }
func (q *BullMQQueue) Engine() Engine { return Valkey }
func (q *BullMQQueue) PID() int       { return q.cmd.Process.Pid }

// The per-call methods: never used, the bench calls RunEnqueue and RunLatency instead.
func (q *BullMQQueue) Enqueue(context.Context, []byte) error        { return errNotInProcess }
func (q *BullMQQueue) EnqueueBatch(context.Context, [][]byte) error { return errNotInProcess }
func (q *BullMQQueue) EnqueueWithRow(context.Context, int64, []byte) error {
	return errNotInProcess
}
func (q *BullMQQueue) Consume(context.Context, int, Handler) (func() error, error) {
	return nil, errNotInProcess
}

// RunEnqueue runs producers loops of add (batch 0) or addBulk for d inside Node.
func (q *BullMQQueue) RunEnqueue(ctx context.Context, producers, batch int, d time.Duration) (float64, error) {
	var r struct {
		Jobs    float64 `json:"jobs"`
		Seconds float64 `json:"seconds"`
	}
	if err := q.call(ctx, map[string]any{"op": "enqueue", "producers": producers, "batch": batch, "seconds": d.Seconds()}, &r); err != nil {
		return 0, err
	}
	if r.Seconds <= 0 {
		return 0, fmt.Errorf("bullmq driver: enqueue ran for %v s", r.Seconds)
	}
	return r.Jobs / r.Seconds, nil
}

func (q *BullMQQueue) Fill(ctx context.Context, n int) error {
	return q.call(ctx, map[string]any{"op": "fill", "n": n}, nil)
}

// Drain maps the driver's own measurement (first handler start → n-th completed event) onto m.
func (q *BullMQQueue) Drain(ctx context.Context, workers int, m *DrainMarks) error {
	var r struct {
		StartupMS float64 `json:"startup_ms"`
		WindowMS  float64 `json:"window_ms"`
	}
	if err := q.call(ctx, map[string]any{"op": "drain", "workers": workers, "n": m.n}, &r); err != nil {
		return err
	}
	first := m.begun.Add(time.Duration(r.StartupMS * float64(time.Millisecond)))
	m.first.Store(first.UnixNano())
	m.acked.Store(m.n - 1)
	m.last.Store(first.Add(time.Duration(r.WindowMS * float64(time.Millisecond))).UnixNano())
	if m.after != nil {
		m.after()
	}
	m.acked.Add(1)
	close(m.done)
	return nil
}

// RunLatency is the open-loop latency scenario run inside Node under the same rules as
// openLoop; the driver answers every latency, recorded here into the same HdrHistogram.
func (q *BullMQQueue) RunLatency(ctx context.Context, rate float64, d time.Duration, workers, senders int) (LatencyResult, error) {
	res := LatencyResult{System: q.Name()}
	var r struct {
		Offered     int64     `json:"offered"`
		Sent        int64     `json:"sent"`
		Received    int64     `json:"received"`
		SendSeconds float64   `json:"send_seconds"`
		LatencyUS   []float64 `json:"latency_us"`
		LateUS      []float64 `json:"late_us"`
	}
	if err := q.call(ctx, map[string]any{"op": "latency", "rate": rate, "seconds": d.Seconds(), "workers": workers, "senders": senders}, &r); err != nil {
		return res, err
	}
	hist, late := newLatencyHist(), newLatencyHist()
	for _, us := range r.LatencyUS {
		hist.record(time.Duration(us * float64(time.Microsecond)))
	}
	for _, us := range r.LateUS {
		late.record(time.Duration(us * float64(time.Microsecond)))
	}
	res.Offered, res.Sent, res.Received, res.SendSeconds = r.Offered, r.Sent, r.Received, r.SendSeconds
	res.Latency, res.SenderLate = hist.summary(), late.summary()
	if res.Received < res.Sent {
		return res, fmt.Errorf("%w: %d of %d jobs reached a handler", errIncomplete, res.Received, res.Sent)
	}
	return res, nil
}

func (q *BullMQQueue) Reset(ctx context.Context) error {
	return q.call(ctx, map[string]any{"op": "reset"}, nil)
}

// Close ends the driver (close op, then a kill if it lingers) and reaps it.
func (q *BullMQQueue) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = q.call(ctx, map[string]any{"op": "close"}, nil)
	_ = q.in.Close()
	done := make(chan error, 1)
	go func() { done <- q.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		q.kill()
		return <-done
	}
}
