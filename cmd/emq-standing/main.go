// Command emq-standing sets certification folders side by side: it reads each folder's
// report.json (held to report.schema.json) and writes standing.json and a self-contained
// standing.html into -out — clause by clause, implementation by implementation, each clause's
// verdict and the rule a failure breaks.
//
//	emq-standing -out out/standing certification/reference certification/node/port …
//
// Exit status: 0 written, 2 a folder without a valid report.json or the output not writable.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/echomq/kit/contracts/standing"
)

func main() {
	out := flag.String("out", "standing", "the folder standing.json and standing.html go to")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: emq-standing [-out DIR] CERTIFICATION-FOLDER…\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	s, err := standing.Read(flag.Args())
	if err == nil {
		err = standing.Write(*out, s)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "emq-standing: %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("standing: %d implementations, %d contracts: %s\n", len(s.Implementations), len(s.Contracts), filepath.Join(*out, "standing.html"))
}
