package measure

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/kit/reference/connector"
)

// ServerTime is Valkey's own account of the bus's scripts during a measurement, from
// INFO commandstats (reset before, read after): how much of the wall time the server's one
// main thread spent inside EVALSHA.
type ServerTime struct {
	Calls       int64   `json:"evalsha_calls"`
	UsecPerCall float64 `json:"usec_per_call"`
	UsecPerJob  float64 `json:"usec_per_job"`
	ScriptShare float64 `json:"script_share"` // script µs ÷ wall µs: 1 means the main thread did nothing else
}

// ScriptCost is one bundle script's server time, measured alone on Jobs jobs.
type ScriptCost struct {
	Script      string  `json:"script"`
	Jobs        int     `json:"jobs"`
	Calls       int64   `json:"calls"`
	UsecPerCall float64 `json:"usec_per_call"`
	UsecPerJob  float64 `json:"usec_per_job"`
}

// ResetStats zeroes the server's command statistics.
func ResetStats(ctx context.Context, c *connector.Conn) error {
	if _, err := c.Do(ctx, "CONFIG", "RESETSTAT"); err != nil {
		return fmt.Errorf("bench: CONFIG RESETSTAT: %w", err)
	}
	return nil
}

// EvalshaStats reads cmdstat_evalsha's calls and usec.
func EvalshaStats(ctx context.Context, c *connector.Conn) (calls, usec int64, err error) {
	v, err := c.Do(ctx, "INFO", "commandstats")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: INFO commandstats: %w", err)
	}
	for _, line := range strings.Split(string(v.Str), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				calls, err = strconv.ParseInt(val, 10, 64)
			case "usec":
				usec, err = strconv.ParseInt(val, 10, 64)
			}
			if err != nil {
				return 0, 0, fmt.Errorf("bench: cmdstat_evalsha %q: %w", rest, err)
			}
		}
		return calls, usec, nil
	}
	return 0, 0, nil // no EVALSHA since the reset
}
