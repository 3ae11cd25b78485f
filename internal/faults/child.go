package faults

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/echomq/kit/reference/bus"
)

// EnvChild tells a re-executed binary to run ChildConsumer: "addr queue".
const EnvChild = "EMQ_FAULTS_CHILD"

// ChildConsumer drains queue at addr and prints each id its handler runs, one a line, until it
// is killed. A test binary calls it from TestMain when EnvChild is set.
func ChildConsumer(addr, queue string, opt Options) error {
	ctx := context.Background()
	b, err := open(ctx, addr)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	c, err := b.Consumer(queue, bus.ConsumerOptions{Concurrency: opt.Workers, Lease: bus.Ms(opt.Lease),
		Park: 200 * time.Millisecond, Maintain: opt.Lease / 5, MaxAttempts: 1000,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }},
		func(ctx context.Context, j *bus.Job) error {
			mu.Lock()
			fmt.Fprintln(out, j.ID)
			err := out.Flush()
			mu.Unlock()
			time.Sleep(time.Millisecond) // a little work, so the kill finds jobs in flight
			return err
		})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// Reexec starts the current binary with EnvChild set (and args, e.g. -test.run=^$) as a
// consumer process.
func Reexec(args ...string) func(addr, queue string) (Process, error) {
	return func(addr, queue string) (Process, error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), EnvChild+"="+addr+" "+queue)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		p := &child{cmd: cmd, ids: make(chan string, 1024)}
		go func() {
			defer close(p.ids)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				p.ids <- sc.Text()
			}
		}()
		return p, nil
	}
}

type child struct {
	cmd *exec.Cmd
	ids chan string
}

func (c *child) Handled() <-chan string { return c.ids }

// Kill SIGKILLs the consumer process (its whole group) and reaps it.
func (c *child) Kill() error {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	_ = c.cmd.Wait()
	return nil
}
