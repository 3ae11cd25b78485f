package contracts

// rulesLifecycle are the rules of retry, promote, fail, the morgue, reap and the checkpoint (C09, C10, C11), beside their checks.
var rulesLifecycle = []Rule{}
