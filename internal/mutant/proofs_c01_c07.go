package mutant

// proofsC01toC07: the statements each catalogue mutant of C01–C07 breaks (proofs.go).
var proofsC01toC07 = map[string][]string{}
