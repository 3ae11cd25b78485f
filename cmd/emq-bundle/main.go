// Command emq-bundle prints the bundle version, every script's SHA1 and the bundle digest, all
// computed from the embedded sources.
package main

import (
	"fmt"
	"os"

	"github.com/echomq/kit/lua"
)

func main() {
	b, err := lua.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "emq-bundle:", err)
		os.Exit(2)
	}
	fmt.Printf("bundle  %s\n", b.Version())
	for _, s := range b.Scripts() {
		fmt.Printf("%-14s %s\n", s.Name, s.SHA1)
	}
	fmt.Printf("digest  %s\n", b.Digest())
	rs, err := lua.Releases()
	if err != nil {
		fmt.Fprintln(os.Stderr, "emq-bundle:", err)
		os.Exit(2)
	}
	fmt.Println("\nreleased bundles (lua/versions.txt):")
	for _, r := range rs {
		mark := ""
		if r.Version == b.Version() && r.Digest != b.Digest() {
			mark = "  ← the scripts no longer match: bump lua.Version or revert"
		}
		fmt.Printf("  %s %s%s\n", r.Version, r.Digest, mark)
	}
}
