// Command badport wraps a real port and sabotages one op, for the harness's robustness tests:
// BADPORT_CMD is the real port (split on blanks), BADPORT_OP the op to sabotage and
// BADPORT_MODE what happens there: crash (exit 3 without answering), hang (never answer),
// garbage (print a line that is not a reply) or linger (answer, then never exit); with BADPORT_OP "*" and mode count, every reply
// carries the port's own count of requests instead of the seq it answers. BADPORT_CLAIMS, when set, replaces the claims of
// the port's hello by this comma-separated list; BADPORT_HIDE_CAPS drops these capabilities
// (comma-separated) from it; BADPORT_LOG appends each session's first op to that file;
// BADPORT_LATE (a duration, e.g. 1ms) holds back every reply that long: a slower runtime.
// Two modes need a request written behind the sabotaged one (requests in flight, PROTOCOL.md
// B-280), and act on the op's first occurrence only: swap serves the request behind it first and
// prints its reply first (a port that answers in completion order); ahead serves the request
// behind it first but prints both replies in order (a port that runs requests concurrently).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// seq is a request's seq.
func seq(req []byte) uint64 {
	var r struct {
		Seq uint64 `json:"seq"`
	}
	_ = json.Unmarshal(req, &r)
	return r.Seq
}

func main() {
	argv := strings.Fields(os.Getenv("BADPORT_CMD"))
	op, mode := os.Getenv("BADPORT_OP"), os.Getenv("BADPORT_MODE")
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "badport: BADPORT_CMD is empty")
		os.Exit(2)
	}
	late, _ := time.ParseDuration(os.Getenv("BADPORT_LATE"))
	real := exec.Command(argv[0], argv[1:]...)
	real.Stderr = os.Stderr
	in, _ := real.StdinPipe()
	out, _ := real.StdoutPipe()
	if err := real.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "badport:", err)
		os.Exit(2)
	}
	replies := bufio.NewScanner(out)
	replies.Buffer(nil, 64<<20)
	reqs, taken := requests(in)
	count, reordered := 0, false
	for line := range reqs {
		count++
		if log := os.Getenv("BADPORT_LOG"); count == 1 && log != "" {
			// One line per session: its first op (PROTOCOL.md: a fresh process per clause, hello first).
			var first struct {
				Op string `json:"op"`
			}
			_ = json.Unmarshal(line, &first)
			if f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintln(f, first.Op)
				f.Close()
			}
		}
		var req struct {
			Op string `json:"op"`
		}
		_ = json.Unmarshal(line, &req)
		if req.Op == op && (mode == "swap" || mode == "ahead") && !reordered {
			fmt.Fprintf(os.Stderr, "badport: sabotaging %s with %s\n", op, mode)
			reordered = true
			held := line
			taken <- struct{}{}
			behind, ok := <-reqs
			if !ok {
				os.Exit(4)
			}
			count++
			next := roundTrip(in, replies, behind)
			taken <- struct{}{}
			mine := roundTrip(in, replies, held)
			if mode == "swap" {
				mine, next = next, mine
			}
			fmt.Printf("%s\n%s\n", mine, next)
			continue
		}
		if req.Op == op {
			fmt.Fprintf(os.Stderr, "badport: sabotaging %s with %s\n", op, mode)
			switch mode {
			case "crash":
				real.Process.Kill()
				os.Exit(3)
			case "hang":
				time.Sleep(time.Hour)
			case "garbage":
				fmt.Println("Segmentation fault (not really)")
				taken <- struct{}{}
				continue
			case "linger":
				fmt.Printf("{\"seq\":%d,\"ok\":true,\"result\":{}}\n", seq(line))
				time.Sleep(time.Hour)
			}
		}
		fmt.Fprintf(in, "%s\n", line)
		taken <- struct{}{}
		if !replies.Scan() {
			os.Exit(4)
		}
		reply := replies.Bytes()
		if hide := os.Getenv("BADPORT_HIDE_CAPS"); req.Op == "hello" && hide != "" {
			var r map[string]any
			if json.Unmarshal(reply, &r) == nil && r["ok"] == true {
				res := r["result"].(map[string]any)
				caps, _ := res["capabilities"].([]any)
				var kept []any
				for _, c := range caps {
					if !strings.Contains(","+hide+",", ","+fmt.Sprint(c)+",") {
						kept = append(kept, c)
					}
				}
				res["capabilities"] = kept
				reply, _ = json.Marshal(r)
			}
		}
		if claims := os.Getenv("BADPORT_CLAIMS"); req.Op == "hello" && claims != "" {
			var r map[string]any
			if json.Unmarshal(reply, &r) == nil && r["ok"] == true {
				r["result"].(map[string]any)["claims"] = strings.Split(claims, ",")
				reply, _ = json.Marshal(r)
			}
		}
		if op == "*" && mode == "count" {
			var r map[string]any
			if json.Unmarshal(reply, &r) == nil {
				if r["seq"] != float64(count) {
					fmt.Fprintf(os.Stderr, "badport: sabotaging %s with %s\n", req.Op, mode)
				}
				r["seq"] = count
				reply, _ = json.Marshal(r)
			}
		}
		time.Sleep(late)
		fmt.Printf("%s\n", reply)
		if req.Op == "close" {
			break
		}
	}
	in.Close()
	real.Wait()
}

// requests reads the kit's requests on a goroutine of their own, so that the end of the input
// reaches the real port at once, even while badport waits for a reply (a park in flight, B-286):
// each line is handed over, and taken once badport has written it to the real port (or dropped
// it); after the last, the real port's input is closed.
func requests(in io.Closer) (<-chan []byte, chan<- struct{}) {
	lines, taken := make(chan []byte), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
			<-taken
		}
		in.Close()
		close(lines)
	}()
	return lines, taken
}

// roundTrip hands req to the real port and returns its reply.
func roundTrip(in io.Writer, replies *bufio.Scanner, req []byte) []byte {
	fmt.Fprintf(in, "%s\n", req)
	if !replies.Scan() {
		os.Exit(4)
	}
	return append([]byte(nil), replies.Bytes()...)
}
