package engines

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/echomq/kit/internal/engines/container"
)

// Images for container mode, by Valkey kind.
var valkeyImages = map[string]struct{ image, server string }{
	KindValkey:   {"valkey/valkey:8.1", "valkey-server"},
	KindValkey80: {"valkey/valkey:8.0", "valkey-server"},
	KindRedis:    {"redis:7.0", "redis-server"},
}

const postgresImage = "postgres:16"

func containerAvailable(ctx context.Context) error {
	if err := container.Available(ctx); err != nil {
		return fmt.Errorf("%w: container mode: %v", ErrUnavailable, err)
	}
	return nil
}

func containerValkey(ctx context.Context, kind string, extra []string) (*Valkey, error) {
	if err := containerAvailable(ctx); err != nil {
		return nil, err
	}
	img := valkeyImages[kind]
	// DEBUG for C01's reload (see startValkeyOnce); "yes", not "local": the kit reaches the
	// container through its published port, which the server does not see as loopback.
	cmd := append([]string{img.server, "--save", "", "--appendonly", "no", "--enable-debug-command", "yes"}, extra...)
	s, err := container.Run(ctx, container.Spec{Image: img.image, Port: "6379/tcp", Cmd: cmd})
	if err != nil {
		return nil, fmt.Errorf("engines: %w", err)
	}
	stop := func() error { return s.Terminate(context.Background()) }
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var info map[string]string
	for {
		if info, err = valkeyInfo(wctx, addr, argValue(extra, "--requirepass")); err == nil {
			break
		}
		select {
		case <-wctx.Done():
			stop()
			return nil, fmt.Errorf("engines: %s container at %s: %w", img.image, addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	v := &Valkey{Addr: addr, Mode: ModeContainer, kind: kind, stop: onceErr(stop)}
	v.Server, v.Version = serverVersion(info)
	return v, nil
}

// onceErr makes a stop function idempotent.
func onceErr(f func() error) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = f() })
		return err
	}
}

func containerPostgres(ctx context.Context, settings map[string]string) (*Postgres, error) {
	if err := containerAvailable(ctx); err != nil {
		return nil, err
	}
	cmd := []string{"postgres"}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		cmd = append(cmd, "-c", k+"="+settings[k])
	}
	s, err := container.Run(ctx, container.Spec{
		Image: postgresImage, Port: "5432/tcp", Cmd: cmd,
		Env:     map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"},
		WaitLog: "database system is ready to accept connections", WaitLogCount: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("engines: %w", err)
	}
	stop := onceErr(func() error { return s.Terminate(context.Background()) })
	dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
	ver, err := pgVersion(ctx, dsn)
	if err != nil {
		stop()
		return nil, fmt.Errorf("engines: %s container: %w", postgresImage, err)
	}
	return &Postgres{URL: dsn, Mode: ModeContainer, Version: ver, stop: stop}, nil
}
