package contracts

// The statements of lua/README.md and the lua scripts' headers (trace.go).

// traceLua maps each statement id to the rules that exercise it.
var traceLua = map[string][]string{}

// notCheckedLua maps each statement the kit does not check to the reason.
var notCheckedLua = map[string]string{}
