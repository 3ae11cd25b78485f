package contracts

// UnreadableLines exports, to the external tests, the lines C01 unreadable-lines-refused writes
// on purpose (a copy of the kit's requests holds them beside the requests).
var UnreadableLines = unreadableLines
