package mutant

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/echomq/kit/reference/bus"
)

// uncheckedField is uncheckedRange for a field the kit's JSON layer (protocol.Check, in
// drivers.Dispatch) bounds before any driver sees it: the batch ops' and lane_ceiling's ranges.
// The port's JSON layer passes field of op to the script unchecked: the mutant's own JSON front
// hands the layer and the bus a stand-in (base+1, base+2, …, in range for both) for a value out
// tells, and the hook puts the value back on the call of the edited script op. field "jobs[].delay_ms"
// names a field of each item of the list jobs.
func uncheckedField(op, field string, edits []Edit, base int64, out func(int64) bool) func(*bus.Options) Wrap {
	return func(opt *bus.Options) Wrap {
		c := carried(opt, op, edits, base, out)
		return jsonWrap(func(o string, f map[string]json.RawMessage) (json.RawMessage, error) {
			if o != op {
				return nil, nil
			}
			list, item, isList := strings.Cut(field, "[].")
			if !isList {
				if v, ok := f[field]; ok {
					f[field] = carry(c, v)
				}
				return nil, nil
			}
			var items []map[string]json.RawMessage
			if json.Unmarshal(f[list], &items) != nil {
				return nil, nil // not a list of objects: the JSON layer refuses it as it is
			}
			for _, it := range items {
				if v, ok := it[item]; ok {
					it[item] = carry(c, v)
				}
			}
			f[list], _ = json.Marshal(items)
			return nil, nil
		})(opt)
	}
}

// carry is v with the carrier's stand-in for an integer it holds; anything else as it is.
func carry(c *carrier, v json.RawMessage) json.RawMessage {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return v
	}
	return json.RawMessage(strconv.FormatInt(c.hold(n), 10))
}
