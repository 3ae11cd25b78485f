package runner

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/echomq/kit/lua"
)

// AdmitScripts reads a port's edited copy of lua/ from dir: the SHA1s of the scripts that
// differ from the bundle's (sha1 → script name) and the digest of the bundle they make. With
// them admitted (Options.Admit, AdmitDigest) a run judges the port's behaviour alone, never
// certifies: emq-conform -admit-scripts DIR.
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
