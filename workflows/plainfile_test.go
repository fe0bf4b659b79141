package workflows

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows/workflowstest"
)

// plainFile is a workflow file without parameters that decodePlainFile
// takes: RawMessage members written out of order, spaced, with HTML
// characters and numbers as written, conditions nested, a loop, a commit
// and a budget.
const plainFile = `{"name":"plain","max_concurrency":2,"steps":[
	{"id":"split","task":"List <the> parts & more.","output_schema":{ "type" : "object", "properties":{"tasks":{"type":"array"}},"required":["tasks"]}},
	{"id":"part","depends_on":["split"],"for_each":{"step":"split","path":"/tasks","max_items":3},"task":"Do part.","read_set":["src/**"]},
	{"id":"review","depends_on":["part"],"task":"Review.","when":{"all":[{"step":"split","path":"/tasks/0","equals":1.50},{"not":{"step":"split","path":"/tasks","contains": {"b":1, "a":"<x>"}}}]}},
	{"id":"fix","depends_on":["review"],"task":"Fix.","write_set":["src/"],"when":[{"step":"review","status":["checkpoint_ready"]},{"step":"split","path":"/tasks/1","in":[ 1e2, "y" , {"z":null}]}]}],
	"loops":[{"id":"again","steps":["review","fix"],"max_iterations":3,"until":{"step":"review","status":["checkpoint_ready"]}}],
	"commit":{"message":"Fix the parts.","exclude":["*.log"]},
	"budget":{"tokens":1000,"cost":0.50}}`

// A plain file is decoded once, and into the same Workflow as through
// its tree; a second instance (from the tree made then) is the same too.
func TestAPlainFileIsDecodedOnceIntoWhatItsTreeGives(t *testing.T) {
	once, ok := decodePlainFile(json.RawMessage(plainFile))
	require.True(t, ok, "a plain file is decoded once")
	viaTree, err := parseTemplateTree("plain", "plain.json", json.RawMessage(plainFile))
	require.NoError(t, err)
	require.Equal(t, viaTree.first.Load(), once)

	tpl, err := ParseTemplate("plain", "plain.json", json.RawMessage(plainFile))
	require.NoError(t, err)
	require.Nil(t, tpl.spec, "no tree until one is needed")
	first, err := tpl.InstantiateChecked(nil, nil)
	require.NoError(t, err)
	second, err := tpl.InstantiateChecked(map[string]any{}, nil)
	require.NoError(t, err)
	require.NotSame(t, first, second)
	require.Equal(t, second, first)
	require.Equal(t, `{"properties":{"tasks":{"type":"array"}},"required":["tasks"],"type":"object"}`, string(first.Steps[0].OutputSchema))
	require.Equal(t, `{"a":"\u003cx\u003e","b":1}`, string(first.Steps[2].When[0].All[1].Not.Contains))
}

// The room made for a plain file's steps before it is decoded is bounded:
// "id" keys outside the steps (which the file is then refused for) do not
// reserve a step each. 200,000 of them (1.8 MB) reserved 66 MB.
func TestIDsOutsideAPlainFilesStepsReserveBoundedRoom(t *testing.T) {
	const ids = 200_000
	raw := json.RawMessage(`{"steps":[{"id":"a","task":"x"}],"x":[` + strings.Repeat(`{"id":1},`, ids-1) + `{"id":1}]}`)
	bound := uint64(maxPlainStepRoom)*uint64(unsafe.Sizeof(Step{})) + 8*uint64(len(raw))
	require.Less(t, bound, uint64(ids)*uint64(unsafe.Sizeof(Step{})), "the test tells a bounded room from one per id")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, ok := decodePlainFile(raw)
	runtime.ReadMemStats(&after)
	require.False(t, ok, "an unknown key is the tree's to refuse")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, bound)
}

// What the tree's way reads differently from a straight decoding, or must
// check or refuse, is left to it.
func TestWhatAPlainDecodingCannotSettleGoesThroughTheTree(t *testing.T) {
	for name, raw := range map[string]string{
		"a duplicate key (the tree keeps the last, a struct merges)": `{"steps":[{"id":"a","task":"x","agent":"q","id":"b"}]}`,
		"keys equal without case":                                    `{"steps":[{"id":"a","task":"x"}],"Steps":[{"id":"b","task":"y"}]}`,
		"an escaped key":                                             `{"steps":[{"i\u0064":"a","task":"x"}]}`,
		"an escape in a key":                                         `{"steps":[{"id":"a","ta\/sk":"x"}]}`,
		"a reference":                                                `{"steps":[{"id":"a","task":"${HOME}"}]}`,
		"a description":                                              `{"description":"d","steps":[{"id":"a","task":"x"}]}`,
		"parameters":                                                 `{"params":{},"steps":[{"id":"a","task":"x"}]}`,
		"a template call":                                            `{"template":"","steps":[{"id":"a","task":"x"}]}`,
		"arguments":                                                  `{"args":null,"steps":[{"id":"a","task":"x"}]}`,
		"an unknown key (its error is pinned)":                       `{"steps":[{"id":"a","task":"x","nope":1}],"also":2}`,
		"not an object":                                              `[1]`,
		"not JSON":                                                   `{"steps":`,
		"a non-ASCII key":                                            `{"steps":[{"id":"a","taſk":"x"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, ok := decodePlainFile(json.RawMessage(raw))
			require.False(t, ok)
		})
	}
}

// FuzzPlainFileDecodedOnceAsThroughTheTree: whatever decodePlainFile
// takes, the tree's way takes too, with the same Workflow.
func FuzzPlainFileDecodedOnceAsThroughTheTree(f *testing.F) {
	f.Add(plainFile)
	f.Add(`{"name":"n","max_concurrency":0,"steps":[{"id":"a","task":"x","posture":"read_only","timeout_ms":5}],"failure_policy":"fail_fast","merge":"manual"}`)
	f.Add(`{"steps":[{"id":"a","task":"x","verify":[{"run":"go test ./...","means":"tests pass"}]}],"commit":{"commits":[{"message":"m","paths":["a/"]}]}}`)
	f.Add(`{"steps":[{"id":"a","task":"x","when":{"step":"b","path":"/v","equals":{"k":[1,2.0,"<"]}}}],"loops":[{"id":"l","steps":["a"],"converge":[{"step":"a","path":"/v"}]}]}`)
	f.Add(`{"steps":[{"id":"a","task":"x"}],"steps":[{"id":"b","task":"y"}]}`)
	f.Add(`{"steps":null,"commit":null,"budget":{"tokens":1}}`)
	f.Add(`null`)
	f.Add(` {} `)
	f.Add(`{"steps":[]} {}`)
	f.Add(`{"name":"an \"id"}`)                             // room made for a step, and no steps
	f.Add(`{"name":"an \"id","steps":[]}`)                  // and none in its array
	f.Add(`{"steps":[{"task":"x"},{"id":"b","task":"y"}]}`) // less room than steps
	f.Fuzz(func(t *testing.T, raw string) {
		once, ok := decodePlainFile(json.RawMessage(raw))
		if !ok {
			return
		}
		viaTree, err := parseTemplateTree("f", "f.json", json.RawMessage(raw))
		require.NoError(t, err, "decoded once, but the tree's way refuses it")
		require.Empty(t, viaTree.Params)
		require.Equal(t, viaTree.first.Load(), once)
		a, errA := json.Marshal(once)
		b, errB := json.Marshal(viaTree.first.Load())
		require.Equal(t, errB, errA)
		require.Equal(t, string(b), string(a))
	})
}

// BenchmarkReadPlainFile10000 reads a plain workflow file of 10,000 steps
// (workflowstest.RandomDAG, as BenchmarkRunWorkflowVsLogs's) as ParseTemplate does
// (once) and as it did before (through its tree), turn about.
func BenchmarkReadPlainFile10000(b *testing.B) {
	raw := json.RawMessage(workflowstest.RandomDAG(10000))
	for _, way := range []struct {
		name  string
		parse func(name, source string, raw json.RawMessage) (*Template, error)
	}{{"once", ParseTemplate}, {"tree", parseTemplateTree}} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := way.parse("bench", "bench.json", raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
