package contracts

// rulesIdentity are the rules of the server check, the minter and its lease, the id format and mint order (C01, C02, C05), beside their checks.
var rulesIdentity = []Rule{}
