package engines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// Valkey kinds (ValkeyOptions.Kind).
const (
	KindValkey   = "valkey"    // Valkey 8.1.1, the canon's engine (also "")
	KindRedis    = "redis"     // bookworm's Redis 7.0, unpacked into the cache: a real server of the wrong kind
	KindValkey80 = "valkey8.0" // bookworm-backports Valkey 8.0.1: too old for the canon
)

// Valkey is a running Valkey (or, by Kind, another RESP server).
type Valkey struct {
	Addr    string // host:port
	Mode    Mode
	Version string // server version, e.g. "8.1.1"; "" when unknown
	Server  string // server kind from INFO: "valkey" or "redis"; "" when unknown

	proc *proc        // native mode
	stop func() error // container mode
	kind string
}

// ValkeyOptions select and configure the server.
type ValkeyOptions struct {
	// Args are extra server arguments, e.g. {"--appendonly", "yes", "--appendfsync", "always"}.
	// A given server cannot take them, so non-empty Args always start a server.
	Args []string
	// Kind is "" or "valkey" (8.1.1), "redis" (Debian's Redis 7.0) or "valkey8.0" (8.0.1).
	// Only the default kind is ever taken from EMQ_VALKEY_ADDR.
	Kind string
}

// Stop stops a server we started and removes its data; a no-op for a given server. Idempotent.
func (v *Valkey) Stop() error {
	switch {
	case v == nil:
		return nil
	case v.proc != nil:
		return v.proc.stop()
	case v.stop != nil:
		return v.stop()
	}
	return nil
}

// PID is the server's process ID in native mode, else 0.
func (v *Valkey) PID() int {
	if v == nil || v.proc == nil {
		return 0
	}
	return v.proc.pid()
}

// LogPath is the server's log file in native mode, else "".
func (v *Valkey) LogPath() string {
	if v == nil || v.proc == nil {
		return ""
	}
	return v.proc.logPath
}

// StartValkey returns a live server: the given one (EMQ_VALKEY_ADDR), a native one, or a container.
// ctx bounds the start (provisioning included), not the server's life; call Stop.
func StartValkey(ctx context.Context, opt ValkeyOptions) (*Valkey, error) {
	kind := opt.Kind
	if kind == "" {
		kind = KindValkey
	}
	if kind != KindValkey && kind != KindRedis && kind != KindValkey80 {
		return nil, fmt.Errorf("engines: unknown Valkey kind %q (want %q, %q or %q)", opt.Kind, KindValkey, KindRedis, KindValkey80)
	}
	mode, err := forcedMode()
	if err != nil {
		return nil, err
	}
	addr := os.Getenv(EnvValkeyAddr)
	givenOK := kind == KindValkey && len(opt.Args) == 0
	switch {
	case mode == ModeGiven && givenOK:
		if addr == "" {
			return nil, fmt.Errorf("%w: %s=given but %s is not set", ErrUnavailable, EnvMode, EnvValkeyAddr)
		}
		return givenValkey(ctx, addr)
	case mode == "" && givenOK && addr != "":
		return givenValkey(ctx, addr)
	case mode == ModeContainer:
		return containerValkey(ctx, kind, opt.Args)
	}
	v, err := nativeValkey(ctx, kind, opt.Args)
	if err != nil && mode == "" && errors.Is(err, ErrUnavailable) {
		if cerr := containerAvailable(ctx); cerr == nil {
			return containerValkey(ctx, kind, opt.Args)
		}
	}
	return v, err
}

func givenValkey(ctx context.Context, addr string) (*Valkey, error) {
	info, err := valkeyInfo(ctx, addr, "")
	var rerr *resp.ServerError
	if errors.As(err, &rerr) {
		// It answers but will not tell us (e.g. NOAUTH): use it as given, version unknown.
		return &Valkey{Addr: addr, Mode: ModeGiven, kind: KindValkey}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engines: given %s=%s: %w", EnvValkeyAddr, addr, err)
	}
	v := &Valkey{Addr: addr, Mode: ModeGiven, kind: KindValkey}
	v.Server, v.Version = serverVersion(info)
	return v, nil
}

// valkeyCommand returns the argv that runs a server of this kind, provisioning it if needed.
func valkeyCommand(ctx context.Context, kind string) ([]string, error) {
	switch kind {
	case KindRedis:
		// Unpacked from bookworm's packages into the cache, no root (ci/provision-redis.sh); the
		// wrapper puts its libraries first on LD_LIBRARY_PATH and execs the server.
		cache, err := userCacheDir()
		if err != nil {
			return nil, err
		}
		prefix := filepath.Join(cache, "redis-7.0")
		if err := ensureProvisioned(ctx, cache, prefix, "provision-redis.sh"); err != nil {
			return nil, err
		}
		return []string{filepath.Join(prefix, "bin", "redis-server")}, nil
	case KindValkey80:
		cache, err := userCacheDir()
		if err != nil {
			return nil, err
		}
		prefix := filepath.Join(cache, "valkey-8.0")
		if err := ensureProvisioned(ctx, cache, prefix, "provision-valkey80.sh"); err != nil {
			return nil, err
		}
		return []string{filepath.Join(prefix, "bin", "valkey-server")}, nil
	default:
		cache, err := userCacheDir()
		if err != nil {
			return nil, err
		}
		prefix := filepath.Join(cache, "valkey-"+ValkeyVersion)
		if err := ensureProvisioned(ctx, cache, prefix, "provision-valkey.sh"); err != nil {
			return nil, err
		}
		// Through trixie's loader and libraries: bookworm's glibc is too old for the binary.
		lib := filepath.Join(prefix, "usr", "lib", "x86_64-linux-gnu")
		return []string{filepath.Join(lib, "ld-linux-x86-64.so.2"), "--library-path", lib, filepath.Join(prefix, "valkey-server")}, nil
	}
}

func nativeValkey(ctx context.Context, kind string, extra []string) (*Valkey, error) {
	argv, err := valkeyCommand(ctx, kind)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for i := range 3 { // new ports on a bind race
		if i > 0 {
			// The cluster bus port may be the one another process took: pick it afresh too.
			if extra, err = freshBusPort(extra); err != nil {
				return nil, err
			}
		}
		v, retry, err := startValkeyOnce(ctx, kind, argv, extra)
		if err == nil || !retry {
			return v, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// freshBusPort returns extra with --cluster-port's value replaced by a new free port.
func freshBusPort(extra []string) ([]string, error) {
	out := slices.Clone(extra)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--cluster-port" {
			p, err := freePort()
			if err != nil {
				return nil, err
			}
			out[i+1] = strconv.Itoa(p)
		}
	}
	return out, nil
}

func startValkeyOnce(ctx context.Context, kind string, argv, extra []string) (v *Valkey, retry bool, err error) {
	port, err := freePort()
	if err != nil {
		return nil, false, err
	}
	dir, err := makeTempDir(kind)
	if err != nil {
		return nil, false, err
	}
	args := append([]string{}, argv[1:]...)
	// DEBUG from loopback only: C01 reloads the dataset under a port (DEBUG RELOAD), so that
	// its redials meet a server answering LOADING, as one restarting from its RDB does.
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--enable-debug-command", "local")
	args = append(args, extra...)
	cmd := exec.Command(argv[0], args...)
	cmd.Dir = dir
	p, err := startProc(kind, cmd, dir, filepath.Join(dir, "server.log"), syscall.SIGTERM)
	if err != nil {
		os.RemoveAll(dir)
		return nil, false, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	info, err := waitValkey(ctx, p, addr, argValue(extra, "--requirepass"))
	if err != nil {
		err = p.startErr(fmt.Errorf("engines: %s on %s did not come up: %w", kind, addr, err))
		log := p.logTail()
		p.stop()
		return nil, strings.Contains(log, "Address already in use") || strings.Contains(log, "Failed listening on port"), err
	}
	v = &Valkey{Addr: addr, Mode: ModeNative, proc: p, kind: kind}
	v.Server, v.Version = serverVersion(info)
	return v, false, nil
}

// waitValkey polls until the server answers PING, then reads INFO server. The server that
// answers must be p's own (INFO's process_id): another run may have bound the port between
// freePort and p's bind, and p then exits on "Address already in use" while the other's server
// answers on the address.
func waitValkey(ctx context.Context, p *proc, addr, password string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		if p.exited() {
			return nil, fmt.Errorf("exited: %v", p.waitErr)
		}
		info, err := valkeyInfo(ctx, addr, password)
		if err == nil && info["process_id"] == strconv.Itoa(p.cmd.Process.Pid) {
			return info, nil
		}
		if err == nil {
			err = fmt.Errorf("the server on %s is process %s, not ours (%d)", addr, info["process_id"], p.cmd.Process.Pid)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-p.done:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// argValue returns the value after the last occurrence of flag in args, "" if absent.
func argValue(args []string, flag string) string {
	v := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			v = args[i+1]
		}
	}
	return v
}

// serverVersion picks kind and version from INFO server. Valkey also reports a redis_version
// for compatibility, so valkey_version wins.
func serverVersion(info map[string]string) (server, version string) {
	if v, ok := info["valkey_version"]; ok {
		return "valkey", v
	}
	if v, ok := info["redis_version"]; ok {
		return "redis", v
	}
	return "", ""
}

// infoFields reads an INFO reply's "field:value" lines.
func infoFields(body string) map[string]string {
	info := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":"); ok && !strings.HasPrefix(k, "#") {
			info[k] = v
		}
	}
	return info
}
