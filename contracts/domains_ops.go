package contracts

// The fixtures of the input domains (domains.go): for each op, the state one request acts on
// and a request that, with every field valid, the documents say succeeds. An input refused there
// is refused for the input alone.

// claimedJob enqueues a job into q, claims it and returns the fenced fields of it.
func (t *T) claimedJob(q string) map[string]any {
	t.enqueue(q, "x")
	c := t.mustClaim(q, workLease)
	return map[string]any{"queue": q, "id": c.ID, "token": c.Token}
}

// with adds fields to m.
func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// planted plants one plain row of q in state (an expired lease, a due job or a dead one).
func (t *T) planted(q, state string) string {
	return t.lcPlant(q, state, 1, t.now()-5000, 1, func(int) string { return "p" })[0]
}

var fixtures = map[string]fixture{
	"mint": {base: func(t *T, _ string) map[string]any { return map[string]any{"n": 1} }},
	"key": {base: func(t *T, q string) map[string]any {
		return map[string]any{"queue": q, "type": "pending"}
	}, per: map[string]func(t *T, q string) map[string]any{
		"id": func(t *T, q string) map[string]any {
			return map[string]any{"queue": q, "type": "job", "id": jobID(1 << 40)}
		},
		"lane": func(t *T, q string) map[string]any { return map[string]any{"queue": q, "type": "lane", "lane": "east"} },
	}},
	"slot": {base: func(t *T, _ string) map[string]any { return map[string]any{"key": "emq:{orders}:pending"} }},
	"enqueue": {base: func(t *T, q string) map[string]any {
		return map[string]any{"queue": q, "payload_b64": b64("x")}
	}},
	"claim": {consumes: true, base: func(t *T, q string) map[string]any {
		t.enqueue(q, "x")
		return map[string]any{"queue": q, "lease_ms": workLease}
	}},
	"lane_claim": {consumes: true, base: func(t *T, q string) map[string]any {
		t.laneEnqueue(q, "east", "x")
		return map[string]any{"queue": q, "lease_ms": workLease}
	}},
	"extend":   {base: func(t *T, q string) map[string]any { return with(t.claimedJob(q), "lease_ms", workLease) }},
	"complete": {consumes: true, base: func(t *T, q string) map[string]any { return t.claimedJob(q) }},
	"retry": {consumes: true, base: func(t *T, q string) map[string]any {
		return with(t.claimedJob(q), "max_attempts", 5, "delay_ms", 0, "error", "e")
	}},
	"fail":       {consumes: true, base: func(t *T, q string) map[string]any { return with(t.claimedJob(q), "error", "e") }},
	"checkpoint": {base: func(t *T, q string) map[string]any { return with(t.claimedJob(q), "data_b64", b64("ck")) }},
	"reap": {consumes: true, base: func(t *T, q string) map[string]any {
		t.planted(q, "active")
		return map[string]any{"queue": q, "max_attempts": 5}
	}},
	"promote": {consumes: true, base: func(t *T, q string) map[string]any {
		t.planted(q, "scheduled")
		return map[string]any{"queue": q}
	}},
	"morgue": {base: func(t *T, q string) map[string]any {
		t.planted(q, "dead")
		return map[string]any{"queue": q}
	}},
	"revive": {consumes: true, base: func(t *T, q string) map[string]any {
		return map[string]any{"queue": q, "id": t.planted(q, "dead")}
	}},
	"purge": {consumes: true, base: func(t *T, q string) map[string]any {
		return map[string]any{"queue": q, "id": t.planted(q, "dead")}
	}},
	"pause":       {base: func(t *T, q string) map[string]any { return map[string]any{"queue": q} }},
	"resume":      {base: func(t *T, q string) map[string]any { return map[string]any{"queue": q} }},
	"lane_pause":  {base: func(t *T, q string) map[string]any { return map[string]any{"queue": q, "lane": "east"} }},
	"lane_resume": {base: func(t *T, q string) map[string]any { return map[string]any{"queue": q, "lane": "east"} }},
	"lane_ceiling": {base: func(t *T, q string) map[string]any {
		t.laneEnqueue(q, "east", "x")
		return map[string]any{"queue": q, "lane": "east", "ceiling": 2}
	}},
	"park": {base: func(t *T, q string) map[string]any {
		return map[string]any{"queue": q, "consumers": 1, "jobs": 0, "lease_ms": workLease, "park_ms": 50, "timeout_ms": 100}
	}},
	"clock":     {base: func(t *T, _ string) map[string]any { return map[string]any{} }},
	"reconnect": {base: func(t *T, _ string) map[string]any { return map[string]any{} }},
	"enqueue_batch": {base: func(t *T, q string) map[string]any {
		return map[string]any{"queue": q, "jobs": []map[string]any{{"payload_b64": b64("x"), "delay_ms": 0}}}
	}},
	"claim_batch": {consumes: true, base: func(t *T, q string) map[string]any {
		t.enqueue(q, "x")
		return map[string]any{"queue": q, "lease_ms": workLease, "n": 1}
	}},
	"complete_batch": {consumes: true, base: func(t *T, q string) map[string]any {
		c := t.claimedJob(q)
		return map[string]any{"queue": q, "jobs": []map[string]any{{"id": c["id"], "token": c["token"]}}}
	}},
}
