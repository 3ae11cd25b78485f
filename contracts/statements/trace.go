package statements

import "maps"

// The statement trace: every normative statement of the documents (contracts/CANON.md,
// contracts/PROTOCOL.md, lua/README.md and the lua scripts' headers, as Of and OfHeader read
// them) is exercised by the rules listed for it here, by the ids package contracts quotes them
// under — whose clauses and mutants TRACEABILITY.md names — or is listed as not checked, with
// the reason, in notChecked* and in PROTOCOL.md's "Statements the kit does not check".
// TestStatements and TestTraceability hold the documents, this trace and the run together.

// Trace maps each traced statement id to the ids of the rules that exercise it.
func Trace() map[string][]string {
	out := map[string][]string{}
	for _, m := range []map[string][]string{traceCanon, traceProtocol, traceLua} {
		maps.Copy(out, m)
	}
	return out
}

// NotChecked maps each statement the kit does not check to the reason.
func NotChecked() map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{notCheckedCanon, notCheckedProtocol, notCheckedLua} {
		maps.Copy(out, m)
	}
	return out
}
