package walk

import (
	"fmt"
	"testing"
	"time"

	"github.com/echomq/kit/contracts/internal/model"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
)

// TestGivenIDsAroundMinted: the kit's given ids fall on both sides of any id a minter makes
// now, so a walk's given ids test both orders against minted ones.
func TestGivenIDsAroundMinted(t *testing.T) {
	minted := ids.Encode(ids.BrandJob, ids.Compose(uint64(time.Now().UnixMilli()-protocol.EpochMS), ids.MaxWorker, ids.MaxSequence))
	for n := 1; n <= 4; n++ {
		id := givenID(n)
		if _, err := ids.ParseJob(id); err != nil {
			t.Fatalf("given id %d: %v", n, err)
		}
		if before := id < minted; before != (n%2 == 1) {
			t.Errorf("given id %d (%s) sorts before %s: %v", n, id, minted, before)
		}
	}
}

// TestRepliesRenderedAsTheModel: the port's replies are rendered the way the model renders the
// canon's, so that a claim, a refusal and an error compare as text.
func TestRepliesRenderedAsTheModel(t *testing.T) {
	ck := "Y2s=" // "ck"
	c := &protocol.ClaimResult{ID: "JOB00000000001", PayloadB64: b64("p"), Token: 2, CheckpointB64: &ck}
	got := model.RenderClaim(portClaim(c))
	if want := `{id JOB00000000001 payload "p" token 2 checkpoint "ck" lane ""}`; got != want {
		t.Errorf("claim: %s, want %s", got, want)
	}
	if id := portClaimID(got); id != "JOB00000000001" {
		t.Errorf("claimed id %q", id)
	}
	if id := portClaimID("empty"); id != "" {
		t.Errorf("an empty claim names %q", id)
	}
	for err, want := range map[error]string{nil: "ok", fmt.Errorf("complete: %w", emqerr.Stale): "EMQSTALE", emqerr.Arg: "error: " + emqerr.Arg.Error()} {
		if got := answer(err); got != want {
			t.Errorf("answer(%v) = %q, want %q", err, got, want)
		}
	}
	if got := text("*"); got != "<not base64: *>" {
		t.Errorf("bytes that are not base64: %q", got)
	}
}
