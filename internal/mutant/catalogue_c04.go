package mutant

// c04 are the Lua mutants contract C04 must kill.
var c04 = []Spec{}
