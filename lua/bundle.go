// Package lua is the EchoMQ script bundle: one plain Lua file per script, embedded verbatim, so
// every port loads the same bytes and computes the same SHA1s and bundle digest.
package lua

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Version is the bundle version the fence installs and checks.
const Version = "echomq:2.0.0"

// Script names, one per file <name>.lua.
const (
	Fence         = "fence"
	Enqueue       = "enqueue"
	Claim         = "claim"
	Complete      = "complete"
	EnqueueBatch  = "enqueue_batch"
	ClaimBatch    = "claim_batch"
	CompleteBatch = "complete_batch"
	Retry         = "retry"
	Fail          = "fail"
	Reap          = "reap"
	Promote       = "promote"
	Extend        = "extend"
	Checkpoint    = "checkpoint"
	Revive        = "revive"
	Purge         = "purge"
	Pause         = "pause"
	Resume        = "resume"
	LaneEnqueue   = "lane_enqueue"
	LaneClaim     = "lane_claim"
	LanePause     = "lane_pause"
	LaneResume    = "lane_resume"
	LaneCeiling   = "lane_ceiling"
)

//go:embed *.lua
var sources embed.FS

// Script is one bundle script. Keys and Args are read from its header: Keys[i] is the key
// pattern of KEYS[i+1] (e.g. "emq:{q}:pending"), Args[i] the description of ARGV[i+1].
//
// A batch script also takes a group of keys and arguments once per item after the fixed ones,
// written "-- KEYS[8+k] -> …" and "-- ARGV[1+2k] -> …", "-- ARGV[2+2k] -> …" (k = 0..n-1): the
// base counts on from the fixed lines and the stride is the group's size. RepKeys[j] is then
// the pattern of KEYS[len(Keys)+1+k*len(RepKeys)+j], RepArgs[j] likewise for ARGV.
type Script struct {
	Name    string
	Source  string
	SHA1    string // lower-case hex SHA1 of Source's exact bytes, as SCRIPT LOAD answers
	Keys    []string
	Args    []string
	RepKeys []string // per-item keys of a batch script; nil for a single-job script
	RepArgs []string // per-item arguments of a batch script; nil for a single-job script
}

// Bundle is the loaded, verified set of scripts.
type Bundle struct {
	scripts []Script // sorted by name
	byName  map[string]int
	digest  string
}

// headerLine matches "-- KEYS[3] -> …" and the repeated form "-- ARGV[2+3k] -> …" ("+k" is
// stride 1).
var headerLine = regexp.MustCompile(`^-- (KEYS|ARGV)\[(\d+)(\+(\d*)k)?\] -> (.+)$`)

// Load reads the embedded scripts, checks each header and computes the SHA1s and digest.
func Load() (*Bundle, error) {
	return load(sources)
}

func load(fsys fs.FS) (*Bundle, error) {
	names, err := fs.Glob(fsys, "*.lua")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("lua: no scripts")
	}
	sort.Strings(names)
	b := &Bundle{byName: make(map[string]int, len(names))}
	for _, file := range names {
		src, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("lua: %w", err)
		}
		s := Script{Name: strings.TrimSuffix(file, ".lua"), Source: string(src)}
		sum := sha1.Sum(src)
		s.SHA1 = hex.EncodeToString(sum[:])
		if err := s.readHeader(); err != nil {
			return nil, err
		}
		b.byName[s.Name] = len(b.scripts)
		b.scripts = append(b.scripts, s)
	}
	b.digest = Digest(b.scripts)
	return b, nil
}

// readHeader parses the leading comment block: KEYS and ARGV numbered from 1 without gaps (a
// repeated group after the fixed lines, its strides equal to its size), and a Reply: and an
// Errors: line.
func (s *Script) readHeader() error {
	var reply, errs bool
	stride := map[string]int{}
	for _, line := range strings.Split(s.Source, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		switch m := headerLine.FindStringSubmatch(line); {
		case m != nil:
			n, _ := strconv.Atoi(m[2])
			fixed, rep := &s.Args, &s.RepArgs
			if m[1] == "KEYS" {
				fixed, rep = &s.Keys, &s.RepKeys
			}
			if m[3] == "" {
				if len(*rep) > 0 {
					return fmt.Errorf("lua: %s: header %s[%d] after a repeated %s line", s.Name, m[1], n, m[1])
				}
				if n != len(*fixed)+1 {
					return fmt.Errorf("lua: %s: header %s[%d] out of order", s.Name, m[1], n)
				}
				*fixed = append(*fixed, m[5])
				continue
			}
			k := 1
			if m[4] != "" {
				k, _ = strconv.Atoi(m[4])
			}
			if n != len(*fixed)+len(*rep)+1 {
				return fmt.Errorf("lua: %s: header %s[%d%s] out of order", s.Name, m[1], n, m[3])
			}
			if st, ok := stride[m[1]]; ok && st != k {
				return fmt.Errorf("lua: %s: header %s strides %d and %d differ", s.Name, m[1], st, k)
			}
			stride[m[1]] = k
			*rep = append(*rep, m[5])
		case strings.HasPrefix(line, "-- Reply: "):
			reply = true
		case strings.HasPrefix(line, "-- Errors: "):
			errs = true
		}
	}
	for _, g := range []struct {
		name string
		rep  []string
	}{{"KEYS", s.RepKeys}, {"ARGV", s.RepArgs}} {
		if st, ok := stride[g.name]; ok && st != len(g.rep) {
			return fmt.Errorf("lua: %s: header %s repeats a group of %d with stride %d", s.Name, g.name, len(g.rep), st)
		}
	}
	if (len(s.RepKeys) == 0) != (len(s.RepArgs) == 0) {
		return fmt.Errorf("lua: %s: header repeats KEYS or ARGV but not both", s.Name)
	}
	if len(s.Keys) == 0 || !reply || !errs {
		return fmt.Errorf("lua: %s: header needs KEYS, Reply: and Errors: lines", s.Name)
	}
	return nil
}

// Batch reports whether the script takes a repeated group of keys and arguments per item.
func (s Script) Batch() bool { return len(s.RepKeys) > 0 }

// Digest is the bundle digest over scripts: lower-case hex SHA1 of the lines "name:sha1\n",
// one per script, sorted by name.
func Digest(scripts []Script) string {
	lines := make([]string, len(scripts))
	for i, s := range scripts {
		lines[i] = s.Name + ":" + s.SHA1 + "\n"
	}
	sort.Strings(lines)
	sum := sha1.Sum([]byte(strings.Join(lines, "")))
	return hex.EncodeToString(sum[:])
}

// Version is the bundle version, for symmetry with Digest.
func (b *Bundle) Version() string { return Version }

// Digest is the bundle digest the fence installs and checks.
func (b *Bundle) Digest() string { return b.digest }

// Scripts returns the scripts sorted by name (a copy).
func (b *Bundle) Scripts() []Script { return append([]Script(nil), b.scripts...) }

// Script returns the named script.
func (b *Bundle) Script(name string) (Script, bool) {
	i, ok := b.byName[name]
	if !ok {
		return Script{}, false
	}
	return b.scripts[i], true
}

// MustScript returns the named script and panics if the bundle lacks it; for the names above.
func (b *Bundle) MustScript(name string) Script {
	s, ok := b.Script(name)
	if !ok {
		panic("lua: no script " + name)
	}
	return s
}
