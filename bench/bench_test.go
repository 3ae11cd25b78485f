package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, p := range [][]byte{payload(1764412345123456789), []byte(`{"t": 42}`)} {
		got, err := sentAt(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if string(p) == `{"t": 42}` && got != 42 {
			t.Errorf("respaced jsonb: %d", got)
		}
	}
	for _, bad := range []string{``, `{}`, `{"t":}`, `{"t":x}`, `{"u":1}`, `{"t":1`} {
		if _, err := sentAt([]byte(bad)); !errors.Is(err, errPayload) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestSpread(t *testing.T) {
	s := spreadOf([]float64{5, 1, 3})
	if s.Median != 3 || s.Min != 1 || s.Max != 5 {
		t.Errorf("odd: %+v", s)
	}
	if s := spreadOf([]float64{4, 1, 3, 2}); s.Median != 2.5 {
		t.Errorf("even: %+v", s)
	}
}

func TestLatencyHist(t *testing.T) {
	h := newLatencyHist()
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	s := h.summary()
	if s.Count != 1000 || s.P50 < 495 || s.P50 > 505 || s.P99 < 985 || s.P99 > 995 || s.Max < 999 || s.Max > 1001 {
		t.Errorf("summary %+v", s)
	}
}

func TestSVGHandlesMissingSystems(t *testing.T) {
	var b strings.Builder
	WriteLatencySVG(&b, &LatencyScenario{Title: "t <&>", Results: []*LatencyResult{{System: SysBus, Err: "x"}}}, "a")
	if !strings.HasPrefix(b.String(), "<svg") || strings.Contains(b.String(), "<polyline") || strings.Contains(b.String(), "t <&>") {
		t.Errorf("svg:\n%s", b.String())
	}
}

func TestParamsFor(t *testing.T) {
	for _, m := range []string{"ci", "full", "tiny"} {
		p, err := ParamsFor(m)
		if err != nil || p.Repeats < 1 || p.Producers != p.Workers {
			t.Errorf("%s: %+v %v", m, p, err)
		}
	}
	if _, err := ParamsFor("x"); err == nil {
		t.Error("unknown mode accepted")
	}
}
