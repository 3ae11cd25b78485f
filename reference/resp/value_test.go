package resp_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/resp"
)

// A canon error reply, however deeply wrapped, is found by errors.As as *emqerr.Error; any
// other reply is not.
func TestServerErrorAsEMQ(t *testing.T) {
	err := fmt.Errorf("bus: complete: %w", resp.ParseServerError("EMQSTALE JOB1 token 7 but attempts 1"))
	var e *emqerr.Error
	if !errors.As(err, &e) || e.Type != emqerr.TypeStale || e.Message != "JOB1 token 7 but attempts 1" {
		t.Fatalf("errors.As = %v, %+v", errors.As(err, &e), e)
	}
	if !errors.Is(err, emqerr.Stale) {
		t.Fatal("errors.Is(err, emqerr.Stale) is false")
	}
	e = nil
	if errors.As(fmt.Errorf("x: %w", resp.ParseServerError("WRONGTYPE nope")), &e) || e != nil {
		t.Fatalf("a non-canon reply matched *emqerr.Error: %+v", e)
	}
}
