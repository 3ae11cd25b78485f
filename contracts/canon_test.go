package contracts_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// sectionRef is a canon reference: "§4", "§5.3". Anything else after § is not a reference a
// reader can follow.
var (
	sectionRef = regexp.MustCompile(`§([0-9A-Za-z][0-9A-Za-z.]*)`)
	numbered   = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)
	heading    = regexp.MustCompile(`(?m)^#+ §([0-9]+(?:\.[0-9]+)*) `)
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// repoFiles are the repository's tracked text files, relative to its root.
func repoFiles(t *testing.T) (string, []string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a checkout)", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return root, files
}

func canonSections(t *testing.T, root string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "contracts", "CANON.md"))
	if err != nil {
		t.Fatalf("the canon is not in the repository: %v", err)
	}
	secs := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		secs[m[1]] = true
	}
	for _, want := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		if !secs[want] {
			t.Errorf("contracts/CANON.md has no heading for §%s", want)
		}
	}
	return secs
}

// TestCanonReferencesResolve: every § reference in code, documents and failure messages (the
// rules' quotes) names a numbered heading of contracts/CANON.md.
func TestCanonReferencesResolve(t *testing.T) {
	root, files := repoFiles(t)
	secs := canonSections(t, root)
	check := func(where, text string) {
		for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
			ref := strings.TrimRight(m[1], ".")
			switch {
			case ref == "N" || ref == "N.M":
				// a placeholder in prose about references
			case !numbered.MatchString(ref):
				t.Errorf("%s: %q is not a numbered canon section (write §N or §N.M of contracts/CANON.md)", where, m[0])
			case !secs[ref]:
				t.Errorf("%s: §%s has no heading in contracts/CANON.md", where, ref)
			}
		}
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue // removed in the work tree, or binary
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "§") {
				n++
				check(f+":"+strconv.Itoa(i+1), line)
			}
		}
	}
	for _, r := range rules.All() {
		check("rule "+r.ID, r.Quote)
	}
	if n == 0 {
		t.Fatal("found no § reference at all: the scan is broken")
	}
}

// TestNoPathOutsideTheRepository: no tracked file names a path outside the repository, and every
// relative link in a Markdown document stays inside it and exists.
func TestNoPathOutsideTheRepository(t *testing.T) {
	root, files := repoFiles(t)
	outside := regexp.MustCompile(`/work/|shared` + `/design|\.\./seeds`) // split so this file does not name the path it forbids
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil || bytes.IndexByte(b, 0) >= 0 || strings.HasSuffix(f, "_test.go") {
			continue
		}
		if loc := outside.FindIndex(b); loc != nil {
			t.Errorf("%s names a path outside the repository: %q", f, lineAt(b, loc[0]))
		}
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "#") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			link, _, _ = strings.Cut(link, "#")
			target := filepath.Clean(filepath.Join(root, filepath.Dir(f), link))
			if rel, err := filepath.Rel(root, target); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links %q, outside the repository", f, m[1])
				continue
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %q, which does not exist", f, m[1])
			}
		}
	}
}

func lineAt(b []byte, i int) string {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	end := bytes.IndexByte(b[i:], '\n')
	if end < 0 {
		end = len(b) - i
	}
	return string(b[start : i+end])
}

// TestCanonVectors recomputes the decoded id vectors of CANON.md §3.3 and the slots of §2.3 with
// the reference, so the canon a port author reads cannot drift from the code.
func TestCanonVectors(t *testing.T) {
	root, _ := repoFiles(t)
	b, err := os.ReadFile(filepath.Join(root, "contracts", "CANON.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z]{3}[0-9A-Za-z]{11})` \\| ([0-9]+) \\| ([0-9]+)[^|]*\\| ([0-9]+) \\| ([0-9]+) \\|$")
	rows := row.FindAllStringSubmatch(string(b), -1)
	if len(rows) < 8 {
		t.Fatalf("found %d id vectors in CANON.md §3.3", len(rows))
	}
	for _, m := range rows {
		sf, _ := strconv.ParseUint(m[2], 10, 64)
		ms, _ := strconv.ParseUint(m[3], 10, 64)
		w, _ := strconv.Atoi(m[4])
		seq, _ := strconv.Atoi(m[5])
		if got := ids.Encode(m[1][:3], sf); got != m[1] {
			t.Errorf("snowflake %d encodes as %s, CANON.md says %s", sf, got, m[1])
		}
		if gms, gw, gseq := ids.Split(sf); gms != ms || gw != w || gseq != seq {
			t.Errorf("%s: ms %d worker %d seq %d, CANON.md says %d %d %d", m[1], gms, gw, gseq, ms, w, seq)
		}
	}
	for key, want := range map[string]uint16{"emq:{orders}:pending": 105, "emq:{fills}:pending": 4165, "emq:{payments}:pending": 8507, "{emq}:bundle": 9051, "{emq}:minter:7": 9051} {
		if got := keys.Slot(key); got != want {
			t.Errorf("slot of %s: %d, want %d", key, got, want)
		}
	}
	if keys.CRC16("123456789") != 12739 {
		t.Error("CRC16(123456789) != 12739")
	}
}
