package mutant

// c01 are the Lua mutants contract C01 must kill.
var c01 = []Spec{}
