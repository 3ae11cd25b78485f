package subprocess

import (
	"encoding/json"
	"math"
	"time"
)

// DefaultPerItem is what a request's deadline grows by for each item it names
// (contracts/PROTOCOL.md Part B [B-20]): a limit of 10000 entries or a batch of 1000 jobs is more
// work than one enqueue, and a slower runtime doing one round trip an item must not be failed
// for the kit's choice of a flat deadline.
const DefaultPerItem = 2 * time.Millisecond

// DefaultPerMiB is what a request's deadline grows by for each MiB of the largest line the
// session has sent, this one included ([B-20]): a port decodes and re-encodes the bytes it is
// given, and a reply can carry back what an earlier request stored (a claim returns the payload
// an enqueue sent). A loaded machine took a correct Node port past the flat 10 s on the 1.5 MiB
// payload and its claim.
const DefaultPerMiB = 5 * time.Second

// maxItems bounds the count a request can claim (an input far out of range, sent to see it
// refused, must not buy a deadline of days).
const maxItems = 200_000

// workItems counts the items a request names: mint's n × parallel, reap's, promote's and
// morgue's limit (absent: its default), claim_batch's n, a batch's jobs. A field that is not a
// count (the fields clauses send every wrong type) counts nothing.
func workItems(op string, req []byte) time.Duration {
	var f map[string]json.RawMessage
	if json.Unmarshal(req, &f) != nil {
		return 0
	}
	count := func(name string, absent float64) float64 {
		raw, ok := f[name]
		if !ok {
			return absent
		}
		var n float64
		if json.Unmarshal(raw, &n) == nil && n > 0 {
			return n
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil {
			return float64(len(list))
		}
		return 0
	}
	var n float64
	switch op {
	case "mint":
		n = count("n", 0) * max(count("parallel", 1), 1)
	case "reap", "promote", "morgue":
		n = count("limit", 1000)
	case "claim_batch":
		n = count("n", 0)
	case "enqueue_batch", "complete_batch":
		n = count("jobs", 0)
	}
	return time.Duration(math.Min(n, maxItems))
}

// byteAllowance is perMiB for each MiB of n bytes, counted in whole 64 KiB blocks: a line of
// ordinary size buys nothing, and a deadline stays a round figure in reports.
func byteAllowance(n int, perMiB time.Duration) time.Duration {
	return perMiB / 16 * time.Duration(n>>16)
}

// parkWait is a park request's timeout_ms, the time it may take by design (0 when absent or not
// a count).
func parkWait(req []byte) time.Duration {
	var f struct {
		TimeoutMS float64 `json:"timeout_ms"`
	}
	if json.Unmarshal(req, &f) != nil || f.TimeoutMS <= 0 {
		return 0
	}
	return time.Duration(math.Min(f.TimeoutMS, float64(time.Hour/time.Millisecond))) * time.Millisecond
}
