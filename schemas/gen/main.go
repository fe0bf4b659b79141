// Command gen writes the generated JSON Schemas of package schemas. `go
// generate ./schemas/` (or `make schemas`) runs it in the schemas folder.
package main

import (
	"fmt"
	"os"

	"github.com/pixir-go/pixir/schemas/generate"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := generate.Write(dir); err != nil {
		fmt.Fprintln(os.Stderr, "schemas:", err)
		os.Exit(1)
	}
}
