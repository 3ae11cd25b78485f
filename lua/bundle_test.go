package lua_test

import (
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

var allNames = []string{lua.Fence, lua.Enqueue, lua.Claim, lua.Complete, lua.Retry, lua.Fail, lua.Reap,
	lua.Promote, lua.Extend, lua.Checkpoint, lua.Revive, lua.Purge, lua.Pause, lua.Resume,
	lua.LaneEnqueue, lua.LaneClaim, lua.LanePause, lua.LaneResume, lua.LaneCeiling,
	lua.EnqueueBatch, lua.ClaimBatch, lua.CompleteBatch}

func TestLoad(t *testing.T) {
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	if lua.Version != "echomq:2.0.0" || b.Version() != lua.Version {
		t.Fatalf("version %q", lua.Version)
	}
	scripts := b.Scripts()
	files, _ := filepath.Glob("*.lua")
	if len(scripts) != len(allNames) || len(files) != len(allNames) {
		t.Fatalf("%d scripts, %d files, want %d", len(scripts), len(files), len(allNames))
	}
	want := append([]string(nil), allNames...)
	sort.Strings(want)
	var lines strings.Builder
	for i, s := range scripts {
		if s.Name != want[i] {
			t.Fatalf("script %d is %q, want %q (sorted)", i, s.Name, want[i])
		}
		// The SHA1 is over the file's exact bytes, read here without the embed.
		src, err := os.ReadFile(s.Name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		sum := sha1.Sum(src)
		if s.Source != string(src) || s.SHA1 != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: source or SHA1 differs from the file", s.Name)
		}
		if got, ok := b.Script(s.Name); !ok || got.SHA1 != s.SHA1 {
			t.Fatalf("Script(%q) = %v, %v", s.Name, got.Name, ok)
		}
		lines.WriteString(s.Name + ":" + s.SHA1 + "\n")
	}
	sum := sha1.Sum([]byte(lines.String()))
	if b.Digest() != hex.EncodeToString(sum[:]) {
		t.Fatalf("digest %s, recomputed %x", b.Digest(), sum)
	}
	if _, ok := b.Script("nope"); ok {
		t.Fatal("Script(nope) found")
	}
	// Any script change moves the digest; order of input does not.
	changed := b.Scripts()
	changed[3].SHA1 = strings.Repeat("0", 40)
	if lua.Digest(changed) == b.Digest() {
		t.Fatal("digest blind to a changed script")
	}
	rev := b.Scripts()
	sort.Slice(rev, func(i, j int) bool { return rev[i].Name > rev[j].Name })
	if lua.Digest(rev) != b.Digest() {
		t.Fatal("digest depends on input order")
	}
}

var (
	keysRef = regexp.MustCompile(`KEYS\[(\d+)\]`)
	argvRef = regexp.MustCompile(`ARGV\[(\d+)\]`)
)

// Every header key pattern, filled in, is a key of the grammar; the body uses no KEYS or ARGV
// index beyond its header; a README row names every script.
func TestHeaders(t *testing.T) {
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("{q}", "{orders}", "<id>", ids.Encode(ids.BrandJob, 42), "<g>", "lane-1")
	for _, s := range b.Scripts() {
		seen := map[string]bool{}
		if s.Batch() != (s.Name == lua.EnqueueBatch || s.Name == lua.CompleteBatch) {
			t.Errorf("%s: Batch() = %v (repeated keys %v, args %v)", s.Name, s.Batch(), s.RepKeys, s.RepArgs)
		}
		for _, pat := range append(slices.Clone(s.Keys), s.RepKeys...) {
			k := fill.Replace(pat)
			if _, err := keys.Parse(k); err != nil {
				t.Errorf("%s: header key %q: %v", s.Name, pat, err)
			}
			if seen[k] {
				t.Errorf("%s: key %q declared twice", s.Name, pat)
			}
			seen[k] = true
		}
		for _, m := range keysRef.FindAllStringSubmatch(s.Source, -1) {
			if n, _ := strconv.Atoi(m[1]); n < 1 || n > len(s.Keys) {
				t.Errorf("%s: uses KEYS[%d], header declares %d", s.Name, n, len(s.Keys))
			}
		}
		for _, m := range argvRef.FindAllStringSubmatch(s.Source, -1) {
			if n, _ := strconv.Atoi(m[1]); n < 1 || n > len(s.Args) {
				t.Errorf("%s: uses ARGV[%d], header declares %d", s.Name, n, len(s.Args))
			}
		}
		if !strings.Contains(string(readme), "| `"+s.Name+"` |") {
			t.Errorf("README.md has no table row for %s", s.Name)
		}
	}
}
