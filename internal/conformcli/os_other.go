//go:build !windows

package conformcli

import "syscall"

// stopSignal ends a child emq-engines, which then stops its servers.
var stopSignal = syscall.SIGTERM

const exeSuffix = ""
