// Package engines hands tests, the bench and CLIs a live Valkey and a live PostgreSQL and takes
// them down afterwards. An engine is either given (EMQ_VALKEY_ADDR / EMQ_PG_URL), started natively
// from binaries provisioned by the ci/ scripts into a cache outside the repository, or started in a
// container when a Docker engine answers. EMQ_ENGINES=given|native|container forces one mode.
package engines

import (
	"errors"
	"fmt"
	"os"
)

// Mode says how an engine was obtained.
type Mode string

const (
	ModeGiven     Mode = "given"     // an already running server named by an environment variable
	ModeNative    Mode = "native"    // a process started here from provisioned binaries
	ModeContainer Mode = "container" // a testcontainers-go container
)

// Environment variables the package reads.
const (
	EnvValkeyAddr = "EMQ_VALKEY_ADDR" // host:port of a running Valkey to use as given
	EnvPGURL      = "EMQ_PG_URL"      // URL of a running PostgreSQL to use as given
	EnvMode       = "EMQ_ENGINES"     // force a mode: given, native or container
	EnvCache      = "EMQ_CACHE"       // cache directory for provisioned engines
	EnvPGUser     = "EMQ_PG_USER"     // unprivileged user that runs PostgreSQL when we are root (default nobody)
)

// ErrUnavailable is wrapped by errors that mean "this mode cannot provide an engine here"
// (missing binaries that cannot be provisioned, no Docker engine, no given address), as opposed
// to an engine that was found but failed.
var ErrUnavailable = errors.New("engine unavailable")

// forcedMode reads EMQ_ENGINES; "" means choose automatically.
func forcedMode() (Mode, error) {
	switch m := Mode(os.Getenv(EnvMode)); m {
	case "", ModeGiven, ModeNative, ModeContainer:
		return m, nil
	default:
		return "", fmt.Errorf("engines: %s=%q: want given, native or container", EnvMode, string(m))
	}
}
