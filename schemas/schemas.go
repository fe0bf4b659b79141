// Package schemas holds the JSON Schemas of Pixir's built-in tools and of
// the results they return: the files under tools/ and results/, generated
// from the Go types by package schemas/generate and committed, so that
// clients, tests and reviewers can read them without running Pixir. They are
// never edited by hand: run `make schemas` (or `go generate ./schemas/`);
// a test of schemas/generate fails when they drift from the Go types.
//
// The binary takes the built-in tools' argument schemas from here (Tool)
// instead of reflecting them from the Go types at run time: reflection
// linked invopop/jsonschema and the go/* parsers into every start.
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
)

//go:generate go run ./gen

// Folders of the generated files, relative to this package.
const (
	ToolsDir   = "tools"
	ResultsDir = "results"
)

//go:embed tools/*.json
var toolFiles embed.FS

// Tool is the arguments schema of the built-in tool name as the model is
// given it (compact: tools/<name>.json is the same JSON indented), or false
// when no file is committed for that name. Each call returns a new slice.
func Tool(name string) (json.RawMessage, bool) {
	indented, err := toolFiles.ReadFile(ToolsDir + "/" + name + ".json")
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, indented); err != nil {
		return nil, false // not a file the generator wrote; its test says so
	}
	return b.Bytes(), true
}
