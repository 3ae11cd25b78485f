package contracts

// rulesRefusals are the rules of the key builder's refusals, duplicates, bytes on the claim path, the token fence (C03, C04, C06, C07, C08), beside their checks.
var rulesRefusals = []Rule{}
