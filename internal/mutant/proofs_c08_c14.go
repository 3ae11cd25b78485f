package mutant

// proofsC08toC14: the statements each catalogue mutant of C08–C14 breaks (proofs.go).
var proofsC08toC14 = map[string][]string{}
