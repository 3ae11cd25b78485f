package conformcli

import (
	"fmt"
	"os"
	"path/filepath"
)

// findFaketime is the libfaketime library -faketime names: a path as given, "none" for none,
// and "" for the first of the kit's cache (where ci/provision-faketime.sh unpacks it), Debian's
// package and a source install. None found offers no wall clock: the clause that needs it says
// so, NOT RUN (not offered), instead of failing the port. A path given that is not a file is an
// error.
func findFaketime(flag string) (string, error) {
	switch flag {
	case "none":
		return "", nil
	case "":
		var globs []string
		if c := kitCache(); c != "" {
			globs = append(globs, filepath.Join(c, "libfaketime-*", "lib", "libfaketimeMT.so.1"))
		}
		var cands []string
		for _, g := range append(globs, "/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1", "/usr/local/lib/faketime/libfaketimeMT.so.1") {
			m, _ := filepath.Glob(g)
			cands = append(cands, m...)
		}
		for _, c := range cands {
			if st, err := os.Stat(c); err == nil && !st.IsDir() {
				return c, nil
			}
		}
		return "", nil
	}
	if st, err := os.Stat(flag); err != nil || st.IsDir() {
		return "", fmt.Errorf("-faketime %s: not a file (libfaketime's libfaketimeMT.so.1; \"none\" runs without it)", flag)
	}
	return flag, nil
}

// kitCache is the cache ci/lib/provision.sh fills: $EMQ_CACHE, else $XDG_CACHE_HOME/echomq-kit,
// else ~/.cache/echomq-kit. internal/engines keeps the same rule; emq-conform does not link it
// (it would bring the container client along: cmd/emq-conform TestLeanDependencies).
func kitCache() string {
	if c := os.Getenv("EMQ_CACHE"); c != "" {
		return c
	}
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return filepath.Join(c, "echomq-kit")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "echomq-kit")
	}
	return ""
}
