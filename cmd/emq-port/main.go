// Command emq-port is the reference bus as a port binary: it speaks the port protocol
// (contracts/PROTOCOL.md Part B) on standard input and output over drivers/inproc. A mutant of
// the reference (internal/mutant, built on drivers/inproc) is selected with -mutant NAME or
// EMQ_MUTANT.
//
//	emq-port [-mutant NAME] [-list]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/echomq/kit/internal/mutant"
	"github.com/echomq/kit/internal/portserver"
)

func main() {
	name := flag.String("mutant", os.Getenv("EMQ_MUTANT"), "run this mutant of the reference [EMQ_MUTANT]")
	list := flag.Bool("list", false, "list the mutants and exit")
	flag.Parse()
	if *list {
		for _, s := range mutant.Catalogue() {
			fmt.Printf("%-26s %s  %s\n", s.Name, s.Contract, s.Defect)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, err := mutant.Factory(*name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "emq-port:", err)
		os.Exit(2)
	}
	if *name != "" {
		fmt.Fprintln(os.Stderr, "emq-port: running mutant", *name)
	}
	if err := portserver.ServeFactoryWith(ctx, f, os.Stdin, os.Stdout, mutant.Stdio(*name)); err != nil {
		fmt.Fprintln(os.Stderr, "emq-port:", err)
		os.Exit(1)
	}
}
