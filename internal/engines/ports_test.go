package engines

import (
	"slices"
	"testing"
)

// A retry after a bind race picks the cluster bus port afresh; every other argument stays.
func TestFreshBusPort(t *testing.T) {
	in := []string{"--cluster-enabled", "yes", "--cluster-port", "1", "--save", ""}
	out, err := freshBusPort(in)
	if err != nil {
		t.Fatal(err)
	}
	if out[3] == "1" || out[3] == "" || !slices.Equal(out[:3], in[:3]) || !slices.Equal(out[4:], in[4:]) || in[3] != "1" {
		t.Fatalf("freshBusPort(%q) = %q", in, out)
	}
	if same, _ := freshBusPort([]string{"--save", ""}); !slices.Equal(same, []string{"--save", ""}) {
		t.Fatalf("without --cluster-port the arguments changed: %q", same)
	}
}
