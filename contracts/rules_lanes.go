package contracts

// rulesLanes are the rules of the lanes: ring order, rotation, ceilings and pauses through every transition (C12, C13), beside their checks.
var rulesLanes = []Rule{}
