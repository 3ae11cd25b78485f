package conformcli

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/kit/lua"
)

// AdmitScripts reads a port's edited copy of lua/ from dir: the SHA1s of the scripts that
// differ from the bundle's (sha1 → script name) and the digest of the bundle they make. With
// them admitted (runner.SelfTest) a run judges the port's behaviour alone and never certifies:
// emq-conform -admit-scripts DIR, and emq-selftest -scripts DIR.
func AdmitScripts(b *lua.Bundle, dir string) (map[string]string, string, error) {
	out := map[string]string{}
	scripts := b.Scripts()
	for i, s := range scripts {
		src, err := os.ReadFile(filepath.Join(dir, s.Name+".lua"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		sum := sha1.Sum(src)
		if h := hex.EncodeToString(sum[:]); h != s.SHA1 {
			out[h] = s.Name
			scripts[i].SHA1 = h
		}
	}
	return out, lua.Digest(scripts), nil
}

// splitList reads a comma-separated list of addresses or ids, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
