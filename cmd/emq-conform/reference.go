package main

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/internal/mutant"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
)

// referenceFactory is the in-process reference bus, or one of its mutants (internal/mutant).
func referenceFactory(name string) (drivers.Factory, error) {
	return mutant.Factory(name)
}

// mutantScripts are the SHA1s of a mutant's edited scripts, by script name.
func mutantScripts(b *lua.Bundle, name string) (map[string]string, error) {
	spec, ok := mutant.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown mutant %q", name)
	}
	var opt bus.Options
	if _, err := spec.Apply(&opt); err != nil {
		return nil, err
	}
	out := map[string]string{}
	if opt.Rewrite == nil {
		return out, nil
	}
	for _, s := range b.Scripts() {
		if src := opt.Rewrite(s.Name, s.Source); src != s.Source {
			sum := sha1.Sum([]byte(src))
			out[hex.EncodeToString(sum[:])] = s.Name
		}
	}
	return out, nil
}

// dirScripts admits the scripts in dir that differ from the bundle's (a port's edited copy of
// lua/): sha1 → script name, and the digest of the bundle they make.
func dirScripts(b *lua.Bundle, dir string) (map[string]string, string, error) {
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
