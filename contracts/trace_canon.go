package contracts

// The statements of contracts/CANON.md (trace.go).

// traceCanon maps each statement id to the rules that exercise it.
var traceCanon = map[string][]string{}

// notCheckedCanon maps each statement the kit does not check to the reason.
var notCheckedCanon = map[string]string{}
