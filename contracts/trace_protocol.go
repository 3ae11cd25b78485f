package contracts

// The statements of contracts/PROTOCOL.md (trace.go).

// traceProtocol maps each statement id to the rules that exercise it.
var traceProtocol = map[string][]string{}

// notCheckedProtocol maps each statement the kit does not check to the reason.
var notCheckedProtocol = map[string]string{}
