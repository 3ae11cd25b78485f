// Command fakeport is a tiny, deliberately misbehaving port for the subprocess driver's tests.
// FAKE_MODE picks the misbehaviour; it shows on the op named by FAKE_OP (default mint).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func main() {
	mode, at := os.Getenv("FAKE_MODE"), os.Getenv("FAKE_OP")
	if at == "" {
		at = "mint"
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20) // the deadline tests send lines of megabytes
	out := bufio.NewWriter(os.Stdout)
	reply := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	if mode == "slow-start" {
		// An interpreter that takes its time to come up (FAKE_START_MS, a second by default):
		// the first request waits for it.
		ms, err := strconv.Atoi(os.Getenv("FAKE_START_MS"))
		if err != nil {
			ms = 1000
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	for in.Scan() {
		var req map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fakeport: bad request:", err)
			os.Exit(3)
		}
		seq := uint64(req["seq"].(float64))
		op := req["op"].(string)
		fmt.Fprintf(os.Stderr, "fakeport: got %s seq %d\n", op, seq)
		if mode == "argerr-all" && op != "hello" {
			// Every op is refused, so the session lives on: the test reads what the kit sent.
			reply(fmt.Sprintf(`{"seq":%d,"ok":false,"error":{"type":"EMQARG","message":"refused"}}`, seq))
			continue
		}
		if op == at {
			switch mode {
			case "crash":
				fmt.Fprintln(os.Stderr, "fakeport: panic: boom")
				os.Exit(2)
			case "hang":
				time.Sleep(time.Hour)
			case "hang-child":
				// A grandchild that keeps stdout open: only a process-group kill ends it.
				c := exec.Command("sleep", "3600")
				c.Stdout = os.Stdout
				c.Start()
				time.Sleep(time.Hour)
			case "huge":
				// A 100 MB reply line: the driver must give up at its limit, not read it all.
				fmt.Printf(`{"seq":%d,"ok":true,"result":{"ids":[["`, seq)
				chunk := strings.Repeat("A", 1<<20)
				for range 100 {
					if _, err := os.Stdout.WriteString(chunk); err != nil {
						os.Exit(4)
					}
				}
				fmt.Println(`"]]}}`)
				continue
			case "garbage":
				reply("ready to serve!")
				continue
			case "outofseq":
				reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{"ids":[]}}`, seq+1))
				continue
			case "unknownerr":
				reply(fmt.Sprintf(`{"seq":%d,"ok":false,"error":{"type":"BOGUS","message":"?"}}`, seq))
				continue
			case "badresult":
				reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{"ids":"JOB"}}`, seq))
				continue
			case "stale":
				reply(fmt.Sprintf(`{"seq":%d,"ok":false,"error":{"type":"EMQSTALE","message":"token 7 is not live"}}`, seq))
				continue
			case "unsupported":
				reply(fmt.Sprintf(`{"seq":%d,"ok":false,"error":{"type":"UNSUPPORTED","message":"no mint here"}}`, seq))
				continue
			case "internal":
				reply(fmt.Sprintf(`{"seq":%d,"ok":false,"error":{"type":"INTERNAL","message":"lost connection"}}`, seq))
				continue
			case "late-reply":
				// The reply reaches the pipe half a second after the port exited (a grandchild
				// writes it): as a loaded machine delivers a reply printed just before an exit.
				c := exec.Command("sh", "-c", fmt.Sprintf(`sleep 0.5; echo '{"seq":%d,"ok":true,"result":{"ids":[["JOB0000000000A"]]}}'`, seq))
				c.Stdout = os.Stdout
				c.Start()
				os.Exit(0)
			case "exit1":
				reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{}}`, seq))
				os.Exit(1)
			case "twice":
				reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{"ids":[]}}`, seq))
				reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{"ids":[]}}`, seq))
				continue
			}
		}
		switch op {
		case "hello":
			reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{"name":"fake","runtime":"go","bundle":"echomq:2.0.0","digest":"%040d","claims":["C01"]}}`, seq, 0))
		case "mint":
			reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{"ids":[["JOB0000000000A"]]}}`, seq))
		case "claim":
			reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":null}`, seq))
		case "close":
			reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{}}`, seq))
			os.Exit(0)
		default:
			reply(fmt.Sprintf(`{"seq":%d,"ok":true,"result":{}}`, seq))
		}
	}
}
