package contracts

// rulesWalk are the rules of the model-checked walk over every op, beside their checks.
var rulesWalk = []Rule{}
