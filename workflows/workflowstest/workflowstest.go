// Package workflowstest makes workflow files for the benchmarks of more
// than one package, so that they read and run the same workflow.
package workflowstest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// RandomDAG is the JSON spec of a random DAG of n read-only steps, each
// depending on up to three earlier ones, 8 at a time; the same n gives
// the same spec.
func RandomDAG(n int) []byte {
	r := rand.New(rand.NewPCG(1, 1))
	var s strings.Builder
	s.WriteString(`{"name":"bench","max_concurrency":8,"steps":[`)
	for i := range n {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `{"id":"s%d","task":"Do part %d of the work."`, i, i)
		var deps []string
		for range r.IntN(4) {
			if i > 0 {
				deps = append(deps, fmt.Sprintf(`"s%d"`, r.IntN(i)))
			}
		}
		if len(deps) > 0 {
			fmt.Fprintf(&s, `,"depends_on":[%s]`, strings.Join(deps, ","))
		}
		s.WriteByte('}')
	}
	s.WriteString(`]}`)
	return []byte(s.String())
}
