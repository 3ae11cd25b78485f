package engines_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// waitGone waits for pid to disappear. A process that survives its kill stays for ever, so the
// wait is bounded only against that: it returns as soon as the process goes, however slowly a
// busy machine reaps it.
func waitGone(pid int) bool {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return !alive(pid)
}

// roundTrip sends one RESP command and returns the raw reply lines, independently of the
// package's own client so the tests check it.
func roundTrip(t *testing.T, addr string, args ...string) *bufio.Reader {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return bufio.NewReader(c)
}

func readBulk(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "$") {
		t.Fatalf("want bulk, got %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func infoField(t *testing.T, addr, field string) string {
	t.Helper()
	body := readBulk(t, roundTrip(t, addr, "INFO", "server"))
	for _, l := range strings.Split(body, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

func configGet(t *testing.T, addr, key string) string {
	t.Helper()
	r := roundTrip(t, addr, "CONFIG", "GET", key)
	if line, err := r.ReadString('\n'); err != nil || line != "*2\r\n" {
		t.Fatalf("CONFIG GET: %q %v", line, err)
	}
	readBulk(t, r)
	return readBulk(t, r)
}

// ppid reads a process's parent PID from /proc, 0 if unknown.
func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
