package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// The runner is given servers by address and starts none itself: it links no engine code
// (no Docker client, no testcontainers, no OpenTelemetry; a test checks `go list -deps`). Only
// as a convenience inside the kit's checkout, when no -valkey is given, does it run the kit's
// own cmd/emq-engines as a child process and use the addresses it prints.

// server is what HELLO 2 tells about a server.
type server struct {
	Addr, Name, Version, Mode string
}

// hello asks the server at addr who it is, with HELLO 2.
func hello(ctx context.Context, addr string) (server, error) {
	s := server{Addr: addr}
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return s, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	buf, err := resp.AppendCommand(nil, "HELLO", "2")
	if err != nil {
		return s, err
	}
	if _, err := nc.Write(buf); err != nil {
		return s, err
	}
	v, err := resp.NewReader(bufio.NewReader(nc), resp.DefaultLimits()).Read()
	if err != nil {
		return s, err
	}
	if err := v.Err(); err != nil {
		return s, fmt.Errorf("HELLO 2: %w", err)
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		switch v.Elems[i].Text() {
		case "server":
			s.Name = v.Elems[i+1].Text()
		case "version":
			s.Version = v.Elems[i+1].Text()
		case "mode":
			s.Mode = v.Elems[i+1].Text()
		}
	}
	return s, nil
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
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
}

// errNoEngines says how to give a server when none can be started.
var errNoEngines = errors.New("give a dedicated Valkey 8.1 with -valkey ADDR (in the kit's checkout, `make engines` or `go run ./cmd/emq-engines -valkey-only` starts one; `make conform` does everything)")

// startEngine runs emq-engines -valkey-only [-valkey-kind kind] and waits for the address it
// prints. emq-engines is looked for beside this binary, then on PATH, then built from the kit's
// module when the working directory is inside it.
func startEngine(ctx context.Context, kind string, extra ...string) (*engine, error) {
	bin, err := enginesBinary(ctx)
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
	e := &engine{cmd: cmd}
	wantCluster := slices.Contains(extra, "-cluster")
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "export EMQ_VALKEY_ADDR="); ok {
				e.Addr = v
			}
			if v, ok := strings.CutPrefix(sc.Text(), "export EMQ_VALKEY_CLUSTER="); ok {
				e.Cluster = strings.Split(v, ",")
			}
			if e.Addr != "" && (!wantCluster || len(e.Cluster) > 0) {
				ready <- true
				break
			}
		}
		close(ready)
		_, _ = io.Copy(io.Discard, out) // keep the child's stdout drained
	}()
	select {
	case ok := <-ready:
		if ok {
			return e, nil
		}
		e.Stop()
		return nil, fmt.Errorf("emq-engines %s ended without an address:\n%s", strings.Join(args, " "), stderr.String())
	case <-time.After(5 * time.Minute):
	case <-ctx.Done():
	}
	e.Stop()
	return nil, fmt.Errorf("emq-engines %s did not start in time:\n%s", strings.Join(args, " "), stderr.String())
}

// enginesBinary finds or builds emq-engines.
func enginesBinary(ctx context.Context) (string, error) {
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "emq-engines"); isExec(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("emq-engines"); err == nil {
		return p, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", errNoEngines
	}
	dir, err := os.MkdirTemp("", "emq-conform-engines-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "emq-engines")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/echomq/kit/cmd/emq-engines")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("%w\n(building the kit's emq-engines here failed: %v: %s)", errNoEngines, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
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

var _ io.Writer = (*tailBuffer)(nil)
