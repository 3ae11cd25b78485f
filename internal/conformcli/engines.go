package conformcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/internal/tempdir"
)

// The runner is given servers by address and starts none itself, and emq-conform links no engine
// code (no Docker client, no testcontainers, no OpenTelemetry; a test checks `go list -deps`).
// Only as a convenience inside the kit's checkout, or when the kit's emq-engines sits beside the
// binary, does the shell run emq-engines as a child process and use the addresses it prints.

// errNoEngines says how to give a server when none can be started.
var errNoEngines = errors.New("give a dedicated Valkey 8.1 with -valkey ADDR (in the kit's checkout, `make engines` or `go run ./cmd/emq-engines -valkey-only` starts one; `make conform` does everything)")

// spawner starts servers through the kit's emq-engines, found beside this binary, on PATH, or
// built once from the kit's module when the working directory is inside it. Close removes what
// it built; every server it started stops with the engine that started it.
type spawner struct {
	mu    sync.Mutex
	bin   string
	built string // the temporary folder of a binary built here
}

// Close removes the emq-engines binary built for this run, if any.
func (e *spawner) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.built != "" {
		os.RemoveAll(e.built)
		e.built, e.bin = "", ""
	}
}

// engine is a server run by a child emq-engines process.
type engine struct {
	cmd  *exec.Cmd
	Addr string
	// Cluster are the node addresses of the Valkey Cluster it started beside (-cluster).
	Cluster []string
}

// Stop ends emq-engines, which stops its server.
func (e *engine) Stop() {
	if e.cmd.Process == nil {
		return
	}
	_ = e.cmd.Process.Signal(stopSignal)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
}

// Start runs emq-engines -valkey-only [-valkey-kind kind] extra… and waits for the address it
// prints (and, with -cluster, the cluster's nodes).
func (e *spawner) Start(ctx context.Context, kind string, extra ...string) (*engine, error) {
	bin, err := e.binary(ctx)
	if err != nil {
		return nil, err
	}
	args := append([]string{"-valkey-only"}, extra...)
	if kind != "" {
		args = append(args, "-valkey-kind", kind)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = childAttr()
	var stderr tailBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	eng := &engine{cmd: cmd}
	ready := eng.read(out, slices.Contains(extra, "-cluster"))
	select {
	case ok := <-ready:
		if ok {
			return eng, nil
		}
		eng.Stop()
		return nil, fmt.Errorf("emq-engines %s ended without an address:\n%s", strings.Join(args, " "), stderr.String())
	case <-time.After(5 * time.Minute):
	case <-ctx.Done():
	}
	eng.Stop()
	return nil, fmt.Errorf("emq-engines %s did not start in time:\n%s", strings.Join(args, " "), stderr.String())
}

// read takes the addresses from the child's export lines; the channel says whether they came.
func (e *engine) read(out io.Reader, wantCluster bool) <-chan bool {
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
			switch {
			case !ok:
			case k == "EMQ_VALKEY_CLUSTER":
				e.Cluster = strings.Split(v, ",")
			case strings.HasPrefix(k, "EMQ_") && strings.HasSuffix(k, "_ADDR"):
				e.Addr = v
			}
			if e.Addr != "" && (!wantCluster || len(e.Cluster) > 0) {
				ready <- true
				break
			}
		}
		close(ready)
		_, _ = io.Copy(io.Discard, out) // keep the child's stdout drained
	}()
	return ready
}

// Starter starts a server of this kind through emq-engines, once per clause that needs it.
func (e *spawner) Starter(kind string, extra ...string) contracts.Starter {
	return func(ctx context.Context) (string, func(), error) {
		eng, err := e.Start(ctx, kind, extra...)
		if err != nil {
			return "", nil, err
		}
		return eng.Addr, eng.Stop, nil
	}
}

// serverKind says how emq-engines starts one server a clause may need besides the Valkey under
// test: its -valkey-kind and any further flags.
type serverKind struct {
	Name, Kind string
	Extra      []string
}

// serverKinds are the servers emq-engines starts for a certification, by contracts.Server name.
var serverKinds = []serverKind{
	{contracts.ServerWrongKind.Name, "redis", nil},
	{contracts.ServerOldValkey.Name, "valkey8.0", nil},
	{contracts.ServerClusterValkey.Name, "", []string{"-cluster-node"}},
	{contracts.ServerNoHello.Name, "", []string{"-no-hello"}},
}

// Servers are starters, through emq-engines, of every server in serverKinds.
func (e *spawner) Servers() map[string]contracts.Starter {
	out := make(map[string]contracts.Starter, len(serverKinds))
	for _, s := range serverKinds {
		out[s.Name] = e.Starter(s.Kind, s.Extra...)
	}
	return out
}

// binary finds or builds emq-engines, once.
func (e *spawner) binary(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bin != "" {
		return e.bin, nil
	}
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "emq-engines"+exeSuffix); isExec(p) {
			e.bin = p
			return p, nil
		}
	}
	if p, err := exec.LookPath("emq-engines"); err == nil {
		e.bin = p
		return p, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", errNoEngines
	}
	dir, err := tempdir.New("", "emq-conform-engines-", "emq-conform-engines-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "emq-engines"+exeSuffix)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/echomq/kit/cmd/emq-engines")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("%w\n(building the kit's emq-engines here failed: %v: %s)", errNoEngines, err, strings.TrimSpace(string(out)))
	}
	e.bin, e.built = bin, dir
	return bin, nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && (exeSuffix != "" || st.Mode()&0o111 != 0)
}

// tailBuffer keeps the last few KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
