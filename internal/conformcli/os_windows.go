package conformcli

import "os"

// stopSignal ends a child emq-engines: Windows has no SIGTERM to send.
var stopSignal = os.Kill

const exeSuffix = ".exe"
