package conformcli

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/lua"
)

// readKnownFailing reads a known-failing file: contract ids, one per line, # comments.
func readKnownFailing(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		id, err := contracts.ParseID(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, id)
	}
	return out, sc.Err()
}

// admitScripts reads a port's edited copy of lua/ from dir: the SHA1s of the scripts that
// differ from the bundle's (sha1 → script name) and the digest of the bundle they make. With
// them admitted (runner.SelfTest) a run judges the port's behaviour alone and never certifies:
// emq-conform -admit-scripts DIR.
func admitScripts(b *lua.Bundle, dir string) (map[string]string, string, error) {
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
