package gate

import (
	"bytes"
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/internal/golden"
)

var update = flag.Bool("update", false, "rewrite transcripts/connector.out instead of comparing")

const transcript = "../../transcripts/connector.out"

// TestTranscript runs the gate against a live Valkey 8.1.1 and compares its transcript with the
// committed one byte for byte (with -update it rewrites the file).
func TestTranscript(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	passed, total, err := Run(ctx, addr, &out)
	if err != nil {
		t.Fatalf("gate did not run: %v\n%s", err, out.String())
	}
	if passed != total || total != 8 {
		t.Errorf("gate: %d/%d\n%s", passed, total, out.String())
	}
	if bytes.Contains(out.Bytes(), []byte(addr)) {
		t.Errorf("transcript holds the server address %s", addr)
	}
	golden.Check(t, transcript, out.String(), *update, "make transcripts")
}

// TestGateIsDeterministic runs the gate twice on one server: the two transcripts must be equal.
func TestGateIsDeterministic(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var a, b bytes.Buffer
	if _, _, err := Run(ctx, addr, &a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Run(ctx, addr, &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two runs differ:\n%s\n---\n%s", a.String(), b.String())
	}
}

// TestGateFailsOnWrongServer: the gate must be able to fail — a server that is not Valkey 8.1.x
// (here Redis 7.0, when provisioned) does not pass HELLO.
func TestGateFailsOnWrongServer(t *testing.T) {
	srv := enginestest.ValkeyWith(t, engines.ValkeyOptions{Kind: engines.KindRedis})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	passed, total, err := Run(ctx, srv.Addr, &out)
	if err != nil {
		t.Fatal(err)
	}
	if passed == total || !bytes.Contains(out.Bytes(), []byte("check 5: HELLO 2 identifies Valkey 8.1.x standalone\n  server redis")) ||
		!bytes.HasSuffix(out.Bytes(), []byte("FAIL "+strconv.Itoa(passed)+"/8\n")) {
		t.Fatalf("the gate passed %d/%d on Redis:\n%s", passed, total, out.String())
	}
}
