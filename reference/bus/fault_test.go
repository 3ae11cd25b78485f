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
// once — it is fenced on its token, so sending it again is safe.
func TestLostCompletionSentAgain(t *testing.T) {
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
	if !killed.Load() || runs.Load() != 1 || c.Health().Reconnects < 1 || c.Health().Retries < 1 {
		t.Fatalf("killed %v, runs %d, health %+v: want the completion lost, sent again after a reconnect, the job run once",
			killed.Load(), runs.Load(), c.Health())
	}
}
