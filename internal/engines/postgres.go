package engines

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a running PostgreSQL.
type Postgres struct {
	URL     string // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
	Mode    Mode
	Version string // server_version, e.g. "16.14"; "" when unknown

	proc *proc        // native mode
	stop func() error // container mode
}

// PostgresOptions configure the server.
type PostgresOptions struct {
	// Settings are server settings passed as -c k=v, e.g. {"synchronous_commit": "off"}.
	// A given server cannot take them, so non-empty Settings always start a server.
	Settings map[string]string
}

// Stop stops a server we started and removes its data dir; a no-op for a given server. Idempotent.
func (p *Postgres) Stop() error {
	switch {
	case p == nil:
		return nil
	case p.proc != nil:
		return p.proc.stop()
	case p.stop != nil:
		return p.stop()
	}
	return nil
}

// PID is the postmaster's process ID in native mode, else 0.
func (p *Postgres) PID() int {
	if p == nil || p.proc == nil {
		return 0
	}
	return p.proc.pid()
}

// LogPath is the server's log file in native mode, else "".
func (p *Postgres) LogPath() string {
	if p == nil || p.proc == nil {
		return ""
	}
	return p.proc.logPath
}

// StartPostgres returns a live server: the given one (EMQ_PG_URL), a native one, or a container.
// ctx bounds the start (provisioning included), not the server's life; call Stop.
func StartPostgres(ctx context.Context, opt PostgresOptions) (*Postgres, error) {
	for k := range opt.Settings {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			return nil, fmt.Errorf("engines: bad PostgreSQL setting name %q", k)
		}
	}
	mode, err := forcedMode()
	if err != nil {
		return nil, err
	}
	dsn := os.Getenv(EnvPGURL)
	givenOK := len(opt.Settings) == 0
	switch {
	case mode == ModeGiven && givenOK:
		if dsn == "" {
			return nil, fmt.Errorf("%w: %s=given but %s is not set", ErrUnavailable, EnvMode, EnvPGURL)
		}
		return givenPostgres(ctx, dsn)
	case mode == "" && givenOK && dsn != "":
		return givenPostgres(ctx, dsn)
	case mode == ModeContainer:
		return containerPostgres(ctx, opt.Settings)
	}
	p, err := nativePostgres(ctx, opt.Settings)
	if err != nil && mode == "" && errors.Is(err, ErrUnavailable) {
		if cerr := containerAvailable(ctx); cerr == nil {
			return containerPostgres(ctx, opt.Settings)
		}
	}
	return p, err
}

func givenPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	ver, err := pgVersion(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("engines: given %s: %w", EnvPGURL, err)
	}
	return &Postgres{URL: dsn, Mode: ModeGiven, Version: ver}, nil
}

// pgVersion connects once and reads server_version.
func pgVersion(ctx context.Context, dsn string) (string, error) {
	v, err := pgSetting(ctx, dsn, "server_version")
	// Distribution builds append a suffix: "16.14 (Debian 16.14-1.pgdg120+1)".
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	return v, err
}

// pgSetting connects once and reads one setting of the server at dsn (SHOW).
func pgSetting(ctx context.Context, dsn, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var v string
	return v, conn.QueryRow(ctx, "SHOW "+name).Scan(&v)
}

// sameDir says a and b name one directory (PostgreSQL reports its data directory resolved).
func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return a == b || (err1 == nil && err2 == nil && ra == rb)
}

// pgRunAs is who runs initdb and postgres: ourselves, or (as root, which they refuse) an
// unprivileged user.
type pgRunAs struct {
	cred     *syscall.Credential // nil: ourselves
	uid, gid int
	name     string
}

func pgUser() (pgRunAs, error) {
	if os.Geteuid() != 0 {
		return pgRunAs{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	name := os.Getenv(EnvPGUser)
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return pgRunAs{}, fmt.Errorf("%w: PostgreSQL refuses to run as root and user %q (%s) is missing: %v", ErrUnavailable, name, EnvPGUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 {
		return pgRunAs{}, fmt.Errorf("engines: %s=%s is root; PostgreSQL refuses to run as root", EnvPGUser, name)
	}
	return pgRunAs{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid: uid, gid: gid, name: name}, nil
}

// traversable checks that the user can reach path: every dir on the way needs its x bit for them.
func (r pgRunAs) traversable(path string) error {
	if r.cred == nil {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		perm := fi.Mode().Perm()
		ok := perm&0o001 != 0 ||
			(int(st.Uid) == r.uid && perm&0o100 != 0) ||
			(int(st.Gid) == r.gid && perm&0o010 != 0)
		if !ok {
			return fmt.Errorf("user %s cannot traverse %s (mode %v): keep PostgreSQL's files where every parent dir is traversable (set %s or TMPDIR)", r.name, d, perm, EnvCache)
		}
		if d == "/" {
			return nil
		}
	}
}

func (r pgRunAs) attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: r.cred}
}

func nativePostgres(ctx context.Context, settings map[string]string) (*Postgres, error) {
	cache, err := pgCacheDir()
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(cache, "postgres-"+postgresPkg)
	if err := ensureProvisioned(ctx, cache, prefix, "provision-postgres.sh"); err != nil {
		return nil, err
	}
	who, err := pgUser()
	if err != nil {
		return nil, err
	}
	if err := who.traversable(filepath.Join(prefix, "bin")); err != nil {
		return nil, fmt.Errorf("engines: PostgreSQL binaries: %w", err)
	}
	if err := who.traversable(os.TempDir()); err != nil {
		return nil, fmt.Errorf("engines: PostgreSQL data dir: %w", err)
	}
	var lastErr error
	for range 3 { // a new port on a bind race
		p, retry, err := startPostgresOnce(ctx, prefix, who, settings)
		if err == nil || !retry {
			return p, err
		}
		lastErr = err
	}
	return nil, lastErr
}

func startPostgresOnce(ctx context.Context, prefix string, who pgRunAs, settings map[string]string) (pg *Postgres, retry bool, err error) {
	dir, err := makeTempDir("postgres")
	if err != nil {
		return nil, false, err
	}
	fail := func(err error) (*Postgres, bool, error) { os.RemoveAll(dir); return nil, false, err }
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fail(fmt.Errorf("engines: %w", err))
		}
	}
	if who.cred != nil {
		for _, d := range []string{dir, data, sock} {
			if err := os.Chown(d, who.uid, who.gid); err != nil {
				return fail(fmt.Errorf("engines: give %s to %s: %w", d, who.name, err))
			}
		}
	}
	env := []string{"LC_ALL=C", "LANG=C", "PATH=" + filepath.Join(prefix, "bin") + ":/usr/bin:/bin", "TZ=UTC"}

	// initdb: no fsync (a throwaway cluster), trust auth for the postgres superuser.
	initLog := filepath.Join(dir, "initdb.log")
	initCmd := exec.CommandContext(ctx, filepath.Join(prefix, "bin", "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initCmd.Env, initCmd.Dir, initCmd.SysProcAttr = env, dir, who.attr()
	ip, err := startProc("initdb", initCmd, "", initLog, syscall.SIGTERM)
	if err != nil {
		return fail(err)
	}
	select {
	case <-ip.done:
	case <-ctx.Done():
		ip.stop()
		return fail(ip.startErr(fmt.Errorf("engines: initdb: %w", ctx.Err())))
	}
	if ip.waitErr != nil {
		return fail(ip.startErr(fmt.Errorf("engines: initdb as %q: %w", who.name, ip.waitErr)))
	}

	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	args := []string{"-D", data, "-p", strconv.Itoa(port), "-k", sock, "-c", "listen_addresses=127.0.0.1"}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	cmd := exec.Command(filepath.Join(prefix, "bin", "postgres"), args...)
	cmd.Env, cmd.Dir, cmd.SysProcAttr = env, dir, who.attr()
	// SIGINT is PostgreSQL's fast shutdown (SIGTERM would wait for clients to leave).
	p, err := startProc("postgres", cmd, dir, filepath.Join(dir, "postgres.log"), syscall.SIGINT)
	if err != nil {
		return fail(err)
	}
	dsn := (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path: "/postgres", RawQuery: "sslmode=disable"}).String()
	ver, err := waitPostgres(ctx, p, dsn, data)
	if err != nil {
		err = p.startErr(fmt.Errorf("engines: postgres on port %d did not come up: %w", port, err))
		log := p.logTail()
		p.stop()
		return nil, strings.Contains(log, "could not bind") || strings.Contains(log, "Address already in use"), err
	}
	return &Postgres{URL: dsn, Mode: ModeNative, Version: ver, proc: p}, false, nil
}

// waitPostgres polls until the server accepts a connection and answers its version. The server
// that answers must be p's own (its data directory is data): another run may have bound the
// port between freePort and p's bind, and p then exits while the other's server answers.
func waitPostgres(ctx context.Context, p *proc, dsn, data string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if p.exited() {
			return "", fmt.Errorf("exited: %v", p.waitErr)
		}
		ver, err := pgVersion(ctx, dsn)
		if err == nil {
			var dir string
			if dir, err = pgSetting(ctx, dsn, "data_directory"); err == nil && !sameDir(dir, data) {
				err = fmt.Errorf("the server on %s serves %s, not ours (%s)", dsn, dir, data)
			}
		}
		if err == nil {
			return ver, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}
