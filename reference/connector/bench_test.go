package connector

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/resp"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The benchmarks measure EVALSHA of a trivial script against a live Valkey 8.1.1; ops/s counts
// commands, not batches, so the batched figures compare with the per-command ones.
//
//	go test -run '^$' -bench . -benchmem ./reference/connector
const benchSource = "return 1"

func reportOps(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// parallelism gives 50 goroutines whatever GOMAXPROCS is.
func parallelism() int { return (50 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0) }

func BenchmarkEvalSha(b *testing.B) {
	addr := enginestest.Valkey(b).Addr
	ctx := context.Background()
	c, err := Dial(ctx, addr, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s := NewScript("bench", benchSource)
	if err := c.LoadScript(ctx, s); err != nil {
		b.Fatal(err)
	}
	keys := []string{"bench:k"}

	b.Run("kit/sequential", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := c.EvalSha(ctx, s, keys, "1"); err != nil {
				b.Fatal(err)
			}
		}
		reportOps(b, start)
	})
	b.Run("kit/parallel50", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(parallelism())
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.EvalSha(ctx, s, keys, "1"); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportOps(b, start)
	})
	for _, size := range []int{16, 128} {
		b.Run("kit/batch"+strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			var batch Batch
			var out []resp.Value
			start := time.Now()
			for done := 0; done < b.N; done += size {
				batch.Reset()
				for j := 0; j < size; j++ {
					batch.EvalSha(s, keys, "1")
				}
				out, err = c.Exec(ctx, &batch, out)
				if err != nil || out[size-1].Int != 1 {
					b.Fatal(err)
				}
			}
			reportOps(b, start)
		})
	}
}

// BenchmarkCompare runs the same EVALSHA through rueidis and go-redis/v9 against the same server.
func BenchmarkCompare(b *testing.B) {
	addr := enginestest.Valkey(b).Addr
	ctx := context.Background()
	s := NewScript("bench", benchSource)

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if err := rc.Do(ctx, rc.B().ScriptLoad().Script(benchSource).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	b.Run("rueidis/parallel50", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(parallelism())
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				cmd := rc.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key("bench:k").Arg("1").Build()
				if err := rc.Do(ctx, cmd).Error(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportOps(b, start)
	})
	b.Run("rueidis/batch128", func(b *testing.B) {
		b.ReportAllocs()
		cmds := make(rueidis.Commands, 128)
		start := time.Now()
		for done := 0; done < b.N; done += 128 {
			for j := range cmds {
				cmds[j] = rc.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key("bench:k").Arg("1").Build()
			}
			for _, r := range rc.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportOps(b, start)
	})

	gr := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 50})
	defer gr.Close()
	b.Run("go-redis/parallel50", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(parallelism())
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := gr.EvalSha(ctx, s.SHA1, []string{"bench:k"}, "1").Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportOps(b, start)
	})
	b.Run("go-redis/batch128", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for done := 0; done < b.N; done += 128 {
			pipe := gr.Pipeline()
			for j := 0; j < 128; j++ {
				pipe.EvalSha(ctx, s.SHA1, []string{"bench:k"}, "1")
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		reportOps(b, start)
	})
}
