package lua

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed versions.txt
var versions string

// Release is a bundle version the kit shipped and the digest of its scripts.
type Release struct {
	Version, Digest string
}

// Releases reads lua/versions.txt: every bundle version the kit has shipped, oldest first.
func Releases() ([]Release, error) {
	var out []Release
	for n, line := range strings.Split(versions, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || len(f[1]) != 40 {
			return nil, fmt.Errorf("lua/versions.txt:%d: want \"<version> <digest>\", got %q", n+1, line)
		}
		out = append(out, Release{Version: f[0], Digest: f[1]})
	}
	return out, nil
}

// Recorded is the digest lua/versions.txt records for version, if any.
func Recorded(version string) (string, bool) {
	rs, err := Releases()
	if err != nil {
		return "", false
	}
	for _, r := range rs {
		if r.Version == version {
			return r.Digest, true
		}
	}
	return "", false
}
