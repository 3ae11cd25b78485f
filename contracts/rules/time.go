package rules

// rulesTime are the rules every clause's closing keyspace check holds the scores to.
var rulesTime = []Rule{IntegerMS, PendingZero}

var (
	IntegerMS   = Rule{"A2-integer-ms", `contracts/PROTOCOL.md A2: "the server's TIME in ms (sec*1000 + floor(usec/1000))": every lease deadline, due time and death time is a whole number of milliseconds`}
	PendingZero = Rule{"pending-score-zero", `canon §2.2: "emq:{q}:pending | zset | ids ready to claim; every score is 0, so lexical order (= mint order) decides"; "emq:{q}:lane:<g> | zset | a lane's pending ids, score 0"`}
)
