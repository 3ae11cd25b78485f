package cluster_test

import (
	"errors"
	"testing"

	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
)

// The router's engine check is the canon's, with cluster mode required instead of standalone.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		info connector.ServerInfo
		ok   bool
	}{
		{connector.ServerInfo{Server: "valkey", Version: "8.1.1", Mode: "cluster"}, true},
		{connector.ServerInfo{Server: "valkey", Version: "8.1.1", Mode: "standalone"}, false},
		{connector.ServerInfo{Server: "valkey", Version: "8.0.1", Mode: "cluster"}, false},
		{connector.ServerInfo{Server: "redis", Version: "7.0.15", Mode: "cluster"}, false},
	} {
		err := cluster.Check(c.info, fence.Options{})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, emqerr.Server)) {
			t.Errorf("%+v: %v", c.info, err)
		}
	}
}

func TestSlotOf(t *testing.T) {
	if _, err := cluster.SlotOf(nil); !errors.Is(err, cluster.ErrNoKeys) {
		t.Errorf("no keys: %v", err)
	}
	if _, err := cluster.SlotOf([]string{"emq:{a}:pending", "emq:{b}:pending"}); !errors.Is(err, cluster.ErrCrossSlot) {
		t.Errorf("two queues: %v", err)
	}
	if s, err := cluster.SlotOf([]string{"emq:{a}:pending", "emq:{a}:job:x"}); err != nil || s != cluster.SlotOfQueue("a") {
		t.Errorf("one queue: %d %v", s, err)
	}
}
