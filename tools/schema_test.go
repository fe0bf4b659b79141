package tools

import (
	"encoding/json"

	"github.com/invopop/jsonschema"
)

// reflectedSchema is the schema of the arguments of a tool defined in a
// test, reflected as schemas/generate reflects those of the built-ins
// (which read their committed files): expanded, unreferenced, anonymous,
// without $schema.
func reflectedSchema[A any]() json.RawMessage {
	r := jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true, Anonymous: true}
	s := r.Reflect(new(A))
	s.Version = ""
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}
