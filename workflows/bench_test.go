package workflows

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomWorkflow builds a seeded random DAG of n steps: each depends on up
// to three earlier steps; a third are writers over a handful of areas.
func randomWorkflow(n int, seed uint64) *Workflow {
	r := rand.New(rand.NewPCG(seed, seed))
	areas := []string{"src/a/**", "src/b/*.go", "docs/**", "test/**/*_test.go", "cmd/**", "lib/x.go"}
	w := &Workflow{}
	for i := range n {
		s := Step{ID: fmt.Sprintf("s%d", i), Task: "t"}
		for range r.IntN(4) {
			if i > 0 {
				s.DependsOn = append(s.DependsOn, fmt.Sprintf("s%d", r.IntN(i)))
			}
		}
		if r.IntN(3) == 0 {
			s.WriteSet = []string{areas[r.IntN(len(areas))]}
		} else {
			s.ReadSet = []string{areas[r.IntN(len(areas))]}
		}
		w.Steps = append(w.Steps, s)
	}
	w.Normalize()
	return w
}

func BenchmarkWaves1000(b *testing.B) {
	w := randomWorkflow(1000, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Waves(w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOverlap(b *testing.B) {
	for b.Loop() {
		Overlap("src/**/*.go", "src/{a,b}/[x-z]*.md")
	}
}
