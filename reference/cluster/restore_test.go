package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
)

// A primary connection found lost is replaced once, however many callers met the loss (each
// used to call Reconnect, replacing the socket the one before had just put in place), and the
// replacement is reported to OnReconnect.
func TestLostPrimaryRestoredOnce(t *testing.T) {
	vc := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	restored := map[string]int{}
	r, err := cluster.Dial(ctx, vc.Addrs, cluster.Options{OnReconnect: func(addr string) {
		mu.Lock()
		restored[addr]++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, addr := range vc.Addrs {
		c, err := connector.Dial(ctx, addr, connector.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	key := "emq:{orders}:pending"
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := r.Do(ctx, key, "ZCARD", key); err == nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for addr, n := range restored {
		if n != 1 {
			t.Errorf("%s restored %d times, want once", addr, n)
		}
		total += n
	}
	owner := r.Owner(cluster.SlotOfQueue("orders"))
	if restored[owner] != 1 || r.Reconnects() != int64(total) {
		t.Fatalf("restored %v (owner of the key %s), Reconnects %d: want the owner restored once, and every restore counted", restored, owner, r.Reconnects())
	}
}
