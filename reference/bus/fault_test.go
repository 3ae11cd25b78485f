package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
)

// A completion lost with its connection (killed while the complete is on its way) is sent again
// once the bus has reconnected: the job is done long before its lease could end and run only
// once — it is fenced on its token, so sending it again is safe. The kill's reset may reach the
// bus before it writes the completion: the connector then sends it once, on the new
// connection, and nothing was lost. Such a try proves nothing of the resend, and the test tries
// again (at most five times, each on a queue of its own).
func TestLostCompletionSentAgain(t *testing.T) {
	for range 5 {
		if lostCompletion(t) {
			return
		}
	}
	t.Fatal("in five tries the kill never reached the completion after its write: the resend of a lost completion was not exercised")
}

// lostCompletion runs one try of TestLostCompletionSentAgain and reports whether its completion
// was lost and sent again (a retry of the consumer's).
func lostCompletion(t *testing.T) bool {
	ctx := ctxT(t)
	in := inspect(t, addr)
	canon, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	complete, batch := canon.MustScript(lua.Complete).SHA1, canon.MustScript(lua.CompleteBatch).SHA1
	var b *bus.Bus
	var killed atomic.Bool
	hook := func(args []any) []any {
		// The first completion: kill the bus's main connection as the command goes out.
		if sha, _ := args[1%len(args)].(string); args[0] == "EVALSHA" && (sha == complete || sha == batch) && killed.CompareAndSwap(false, true) {
			in.do("CLIENT", "KILL", "ID", b.Server().ID)
		}
		return args
	}
	b = openBus(t, addr, bus.Options{Test: bus.Seams{Hook: hook}})
	q := qname(t)
	e, err := b.Send(ctx, q, bus.Message{Payload: []byte("once")})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	c, err := b.Consumer(q, bus.ConsumerOptions{Lease: bus.Ms(time.Minute), Maintain: -1}, func(context.Context, *bus.Job) error {
		runs.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := runConsumer(t, c)
	waitFor(t, "the job completed", func() bool { return in.int("EXISTS", "emq:{"+q+"}:job:"+e.ID) == 0 })
	stop()
	if !killed.Load() || runs.Load() != 1 || c.Health().Reconnects < 1 {
		t.Fatalf("killed %v, runs %d, health %+v: want the completion's connection killed, a reconnect, the job run once",
			killed.Load(), runs.Load(), c.Health())
	}
	return c.Health().Retries >= 1
}
