package lua_test

import (
	"testing"

	"github.com/echomq/kit/lua"
)

// TestDigestIsRecorded: the scripts' digest is the one lua/versions.txt records for lua.Version.
// An edit to any script changes the digest; the version must then change with it (or the edit
// go), so that no port is refused EMQVERSION by a bundle that still claims its old version.
func TestDigestIsRecorded(t *testing.T) {
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := lua.Releases()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.Version] {
			t.Errorf("lua/versions.txt records %s twice", r.Version)
		}
		seen[r.Version] = true
	}
	want, ok := lua.Recorded(lua.Version)
	switch {
	case !ok:
		t.Errorf("lua/versions.txt records no digest for lua.Version %s: add the line %q (and a CHANGELOG.md entry)", lua.Version, lua.Version+" "+b.Digest())
	case want != b.Digest():
		t.Errorf("the scripts' digest is %s, but lua/versions.txt records %s for %s: a script changed. Either bump lua.Version "+
			"(bundle.go), add its line to lua/versions.txt and an entry to CHANGELOG.md — ports on the old bytes will be refused EMQVERSION — "+
			"or revert the edit to lua/*.lua", b.Digest(), want, lua.Version)
	}
}
