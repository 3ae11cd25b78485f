package contracts

// rulesWake are the rules of the wake token's duties and parking (C14), beside their checks.
var rulesWake = []Rule{}
