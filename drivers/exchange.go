package drivers

// Recorder is implemented by factories whose sessions exchange lines with a port program (the
// subprocess driver). The harness marks the start of each clause and, when the clause failed,
// attaches what was exchanged since: the port author sees what the kit sent and what the port
// answered, without logging inside the port.
type Recorder interface {
	// Mark forgets everything recorded so far: a new clause starts.
	Mark()
	// Exchange is what every session started since the last Mark exchanged, trimmed for reports.
	Exchange() Exchange
}

// Exchange is a clause's conversation with the port.
type Exchange struct {
	// Lines are the JSON lines in order: "→ " + a request, "← " + a reply, "# " + a note (a
	// session started, lines omitted, a line clipped).
	Lines []string `json:"lines,omitempty"`
	// Stderr is the tail of the port's standard error over the same sessions.
	Stderr string `json:"stderr,omitempty"`
}
