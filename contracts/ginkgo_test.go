package contracts_test

import (
	"context"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	. "github.com/onsi/ginkgo/v2"
)

// TestConformance runs the suite in this process against the in-process reference, under
// Ginkgo's own flags: go test ./contracts -run TestConformance -ginkgo.label-filter=C09, or
// -ginkgo.focus='C09/retry/backoff-parks-in-scheduled' for one clause. Under -short, with no
// filter given, it runs C03 only: TestReferenceInProcess certifies the whole suite.
func TestConformance(t *testing.T) {
	ctx := context.Background()
	vk, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
	if err != nil {
		t.Fatalf("Valkey: %v", err)
	}
	t.Cleanup(func() { vk.Stop() })
	f, err := inproc.New(inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	contracts.Register(&contracts.Config{Factory: f, Valkey: vk.Addr, Bundle: b,
		WrongKind:     engines.Starter(engines.ValkeyOptions{Kind: engines.KindRedis}),
		OldValkey:     engines.Starter(engines.ValkeyOptions{Kind: engines.KindValkey80}),
		ClusterValkey: engines.ClusterStarter(),
		NoHello:       engines.Starter(engines.ValkeyOptions{Args: engines.NoHelloArgs()})})
	sc, rc := GinkgoConfiguration()
	if testing.Short() && sc.LabelFilter == "" && len(sc.FocusStrings) == 0 {
		sc.LabelFilter = "C03"
	}
	RunSpecs(t, "EchoMQ conformance (in-process reference)", sc, rc)
}
