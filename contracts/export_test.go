package contracts

// UnreadableLines exports, to the external tests, the lines C01 unreadable-lines-refused writes
// on purpose (a copy of the kit's requests holds them beside the requests).
var UnreadableLines = unreadableLines

// OpsNotStrings exports the requests C01 seq-echoed-unknown-op-second-hello writes with an op
// that is not a string: outside every op's schema on purpose.
var OpsNotStrings = opsNotStrings
