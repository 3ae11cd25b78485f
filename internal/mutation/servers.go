package mutation

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/kit/contracts"
	kitengines "github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/reference/resp"
)

// ServerSet is every server one certification needs, as emq-selftest flags: "-valkey" →
// host:port, "-wrong-kind" → …. Each certification FLUSHALLs its Valkey, so two certifications
// at once need two sets.
type ServerSet map[string]string

// Args are the set as command-line flags.
func (s ServerSet) Args() []string {
	var out []string
	for _, srv := range contracts.Servers() {
		if a := s[srv.Flag]; a != "" {
			out = append(out, srv.Flag, a)
		}
	}
	if a := s["-valkey"]; a != "" {
		out = append(out, "-valkey", a)
	}
	return out
}

// clusterKey holds a set's 3-primary cluster (its node addresses, comma-separated), when the
// run has one: the judge's -cluster, given only to a cluster stage (Args leaves it out).
const clusterKey = "-cluster"

// clusterArgs are the judge's flags that certify against the set's cluster: its nodes, with
// the set's standalone Valkey as the one a cluster run's C01 presents (-valkey would exclude
// -cluster) and the other servers as in Args.
func (s ServerSet) clusterArgs() []string {
	out := []string{clusterKey, s[clusterKey], contracts.ServerStandaloneValkey.Flag, s["-valkey"]}
	for _, srv := range contracts.Servers() {
		if a := s[srv.Flag]; a != "" && srv.Flag != contracts.ServerStandaloneValkey.Flag {
			out = append(out, srv.Flag, a)
		}
	}
	return out
}

// engines is one `emq-engines -certify`: five servers that stop when it does (and a cluster).
type engines struct {
	cmd *exec.Cmd
	set ServerSet
}

// startSets starts n server sets with the kit's emq-engines, all at once, each with a 3-primary
// cluster of its own when cluster is set.
func startSets(ctx context.Context, bin string, n int, cluster bool, log io.Writer) ([]*engines, error) {
	out := make([]*engines, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			e, err := startSet(ctx, bin, cluster)
			out[i] = e
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		stopSets(out)
		return nil, first
	}
	for i, e := range out {
		fmt.Fprintf(log, "servers %d: %s\n", i, strings.Join(e.set.Args(), " "))
		if cluster {
			fmt.Fprintf(log, "servers %d: cluster %s\n", i, e.set[clusterKey])
		}
	}
	return out, nil
}

// flagOf maps the variables emq-engines prints to the flags emq-selftest takes.
func flagOf() map[string]string {
	m := map[string]string{"EMQ_VALKEY_ADDR": "-valkey", kitengines.EnvValkeyCluster: clusterKey}
	for _, s := range contracts.Servers() {
		m[s.Env()] = s.Flag
	}
	return m
}

func startSet(ctx context.Context, bin string, cluster bool) (*engines, error) {
	args := []string{"-certify"}
	if cluster {
		args = append(args, "-cluster")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // the servers die with this run
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &engines{cmd: cmd, set: ServerSet{}}
	flags := flagOf()
	want := 1 // the Valkey under test, and every other server but a cluster run's standalone one
	for _, s := range contracts.Servers() {
		if s.Name != contracts.ServerStandaloneValkey.Name {
			want++
		}
	}
	if cluster {
		want++
	}
	got := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
			if f := flags[k]; ok && f != "" {
				e.set[f] = v
			}
			if len(e.set) == want {
				got <- true
				break
			}
		}
		close(got)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case ok := <-got:
		if ok {
			return e, nil
		}
	case <-time.After(5 * time.Minute):
	case <-ctx.Done():
	}
	e.stop()
	return nil, fmt.Errorf("emq-engines -certify gave no server set: %s", strings.TrimSpace(stderr.String()))
}

func (e *engines) stop() {
	if e == nil || e.cmd.Process == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
}

func stopSets(es []*engines) {
	for _, e := range es {
		e.stop()
	}
}

// lease takes a free server set of the plan's pool, waiting for one; release gives it back.
// Sets are held by an exclusive lock on a file per set, so the hooks a tool runs in processes
// of its own share the pool without talking to each other, and a crashed hook frees its set.
func (p *Plan) lease(ctx context.Context) (ServerSet, func(), error) {
	for {
		for i, set := range p.Pool {
			f, err := os.OpenFile(filepath.Join(p.Locks, "pool-"+strconv.Itoa(i)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				return nil, nil, err
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				f.Close()
				continue
			}
			return set, func() { f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// flush empties a set's Valkey before a certification: the harness flushes it before each
// clause, but a run's first hello comes before any clause, and the last clause of the previous
// run may have left a fence the next port must not meet (a wrong bundle version, say).
func flush(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var cmd []byte
	for _, args := range [][]any{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}} {
		if cmd, err = resp.AppendCommand(cmd, args...); err != nil {
			return err
		}
	}
	if _, err := c.Write(cmd); err != nil {
		return err
	}
	rd := resp.NewReader(bufio.NewReader(c), resp.DefaultLimits())
	for range 2 {
		v, err := rd.Read()
		if err != nil {
			return err
		}
		if err := v.Err(); err != nil {
			return fmt.Errorf("flush %s: %w", addr, err)
		}
	}
	return nil
}
