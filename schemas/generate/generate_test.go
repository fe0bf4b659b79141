package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/schemas"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// committed is the folder of the committed files: package schemas.
const committed = ".."

const regenerate = "run `make schemas` (or `go generate ./schemas/`) and commit the result; the schemas are generated from the Go types and never edited by hand"

// The committed files are exactly what the Go types produce, and there are
// no others.
func TestCommittedSchemasAreCurrent(t *testing.T) {
	files, err := Files()
	require.NoError(t, err)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(committed, filepath.FromSlash(name)))
		if os.IsNotExist(err) {
			t.Errorf("schemas/%s is missing; %s", name, regenerate)
			continue
		}
		require.NoError(t, err)
		if !bytes.Equal(want, got) {
			t.Errorf("schemas/%s differs from what the Go types produce; %s", name, regenerate)
		}
	}
	// What the binary reads (schemas.Tool, each tool's Schema) is what
	// reflection gives the model, byte for byte.
	for _, tool := range Catalogue() {
		want, err := toolArguments(tool)
		require.NoError(t, err)
		got, ok := schemas.Tool(tool.Name())
		require.True(t, ok, "schemas.Tool(%q); %s", tool.Name(), regenerate)
		require.Equal(t, string(want), string(got), "schemas.Tool(%q)", tool.Name())
		require.Equal(t, string(want), string(tool.Schema()), "%s.Schema()", tool.Name())
	}
	for _, sub := range []string{ToolsDir, ResultsDir} {
		stale, err := Stale(committed, sub, files)
		require.NoError(t, err)
		for _, name := range stale {
			t.Errorf("schemas/%s is not generated from any Go type (a removed tool?); %s", name, regenerate)
		}
	}
}

// patternRule is what every path field of run_workflow says of the one
// rule it is read by (workflows' normalizePatterns, trimPath and
// patternProblem), in the same words.
var patternRule = []string{"a leading ./ is dropped", "a trailing /", "an empty, . or .. segment", "a leading ~", "refused before the run starts"}

// A step's read_set and write_set are read by the rule of the commit's
// paths (normalizePatterns, patternProblem): they say it in the same
// words. They said only "Path patterns", and a model could not know that
// src/ is the folder's contents or that ~/x is refused.
func TestStepPathSetsSayTheirRule(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(committed, ToolsDir, "run_workflow.json"))
	require.NoError(t, err)
	var s struct {
		Properties struct {
			Steps struct {
				Items struct {
					Properties map[string]struct{ Description string }
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	for _, field := range []string{"read_set", "write_set"} {
		desc := s.Properties.Steps.Items.Properties[field].Description
		for _, says := range patternRule {
			require.Contains(t, desc, says, "steps[].%s's description", field)
		}
		require.Contains(t, desc, "src/ is src/**", "steps[].%s's description", field)
	}
}

// A workflow's commit reads its paths, exclude and requires by one rule
// (workflows' normalizePatterns and trimPath): the model is told so where
// it writes each, in what each does. exclude said only "e.g. .workflow/**",
// and a model that wrote ".workflow/" could not know it meant the folder.
func TestCommitPathFieldsSayTheirRule(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(committed, ToolsDir, "run_workflow.json"))
	require.NoError(t, err)
	var s struct {
		Properties struct {
			Commit struct {
				Properties map[string]struct {
					Description string
					Items       struct {
						Properties map[string]struct{ Description string }
					}
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	commit := s.Properties.Commit.Properties
	for field, desc := range map[string]string{
		"exclude":         commit["exclude"].Description,
		"commits[].paths": commit["commits"].Items.Properties["paths"].Description,
		"requires":        commit["requires"].Description,
	} {
		for _, says := range patternRule {
			require.Contains(t, desc, says, "commit.%s's description", field)
		}
	}
	exclude := commit["exclude"].Description
	require.Contains(t, exclude, "never committed", "what exclude does")
	require.Contains(t, exclude, "the same rule as paths", "exclude follows paths' rule")
	require.Contains(t, exclude, ".workflow/ is .workflow/**")
}

func TestEveryBuiltinHasAnOutputType(t *testing.T) {
	var names []string
	for _, tool := range Catalogue() {
		names = append(names, tool.Name())
	}
	var outputs []string
	for name := range Outputs {
		outputs = append(outputs, name)
	}
	slices.Sort(names)
	slices.Sort(outputs)
	require.Equal(t, names, outputs, "schemas.Outputs must name the output type of every built-in tool, and only those")
}

// ErrorKinds must list every ErrorKind constant of tools/errors.go.
func TestErrorKindsAreAllOfThem(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../tools/errors.go", nil, 0)
	require.NoError(t, err)
	var declared []tools.ErrorKind
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ErrorKind" {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				require.NoError(t, err)
				declared = append(declared, tools.ErrorKind(s))
			}
		}
	}
	require.Equal(t, declared, ErrorKinds)
}

// localFiles is tools.Files on the local disk.
type localFiles struct{}

func (localFiles) Open(_ context.Context, path string) (io.ReadCloser, error) { return os.Open(path) }
func (localFiles) WriteFile(_ context.Context, path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// workspace confines lexically; enough for results.
// subagents is a fake Subagents Manager with one finished child, sa-1;
// any other id or agent is not found.
type subagents struct{}

var child = tools.SubagentView{
	ID: "sa-1", Agent: "default", Task: "look", Status: "completed", Summary: "done", Depth: 1,
	Workspace: "/w/.pixir/subagents/sa-1/workspace", WorkspaceMode: "isolated", ChildSessionID: "c1", ElapsedMS: 5,
	Changes: &tools.FileChanges{Added: []string{"a"}, Changed: []string{}, Deleted: []string{}},
}

func notFound(what string) error {
	return &tools.Failure{Kind: tools.ErrNotFound, Message: what + " not found"}
}

func (subagents) Spawn(_ context.Context, req tools.SpawnRequest) (tools.SubagentView, error) {
	if req.Agent != "" {
		return tools.SubagentView{}, notFound(req.Agent)
	}
	return child, nil
}

func (subagents) Preview(req tools.SpawnRequest) (tools.SubagentView, error) { return child, nil }

func (subagents) Wait(_ context.Context, req tools.WaitRequest) (tools.WaitOutcome, error) {
	if req.IDs[0] != "sa-1" {
		return tools.WaitOutcome{}, notFound(req.IDs[0])
	}
	return tools.WaitOutcome{Agents: []tools.SubagentView{child}, Finished: []string{"sa-1"}, Pending: []string{}}, nil
}

func (subagents) SendInput(_ context.Context, id, _ string) (tools.SubagentView, error) {
	if id != "sa-1" {
		return tools.SubagentView{}, notFound(id)
	}
	return child, nil
}

func (subagents) Close(_ context.Context, id string) (tools.SubagentView, error) {
	if id != "sa-1" {
		return tools.SubagentView{}, notFound(id)
	}
	return child, nil
}

func (subagents) List(context.Context) ([]tools.SubagentView, error) {
	return []tools.SubagentView{child}, nil
}

func (subagents) Merge(_ context.Context, id string, dryRun bool) (tools.MergeReport, error) {
	if id != "sa-1" {
		return tools.MergeReport{}, notFound(id)
	}
	return tools.MergeReport{Status: tools.MergeMerged, DryRun: dryRun, MergeID: "m1",
		Applied: tools.MergeFiles{Added: []string{"a"}, Updated: []string{"b"}}}, nil
}

// reports collects the results of the report_checkpoint calls the fake
// step children make, to check them against the schemas too.
var reports struct {
	sync.Mutex
	results []tools.Result
}

// The fake also plays the workflow ports (workflows.Ports) run_workflow is
// bound to.
func (subagents) CheckSpawn(req tools.SpawnRequest) error {
	_, err := subagents{}.Preview(req)
	return err
}

// Start plays a workflow step's child: it calls the report_checkpoint
// bound to its step (a dry run, a good report and a bad one) and ends,
// completed, unless its task starts with "[fail]".
func (subagents) Start(ctx context.Context, req workflows.StepRequest) (tools.SubagentView, error) {
	report := req.Tools[0]
	reports.Lock()
	reports.results = append(reports.results,
		report.DryRun(ctx, tools.Env{}, json.RawMessage(`{"status":"checkpoint_ready","summary":"ok"}`)),
		report.Run(ctx, tools.Env{}, json.RawMessage(`{"status":"checkpoint_ready","summary":"ok","produced":["a"],"verification":["read a"]}`)),
		report.Run(ctx, tools.Env{}, json.RawMessage(`{"status":"partial","summary":"ok","dependent_safe":true}`)),
	)
	reports.Unlock()
	v := child
	v.ID, v.Task = "sa-"+req.Name, req.Task
	if strings.HasPrefix(req.Task, "[fail]") {
		v.Status, v.Error = "failed", &tools.Failure{Kind: tools.ErrProviderError, Message: "the provider failed"}
	}
	go func() { req.Ended <- v }()
	return v, nil
}

func (subagents) Stop(string)                                        {}
func (subagents) Record(workflows.WorkflowEvent) error               { return nil }
func (subagents) ShowPlan([]tools.PlanEntry)                         {}
func (subagents) WorkflowEvents() ([]workflows.WorkflowEvent, error) { return nil, nil }

type workspace struct{ root string }

func (w workspace) Root() string { return w.root }
func (w workspace) Resolve(path string) (string, error) {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.root, path)
	}
	abs = filepath.Clean(abs)
	if abs != w.root && !strings.HasPrefix(abs, w.root+"/") {
		return "", &tools.Failure{Kind: tools.ErrPermissionDenied, Message: path + " is outside the workspace"}
	}
	return abs, nil
}

func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(committed, filepath.FromSlash(name)))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	url := "mem:///" + name
	require.NoError(t, c.AddResource(url, doc))
	s, err := c.Compile(url)
	require.NoError(t, err, name)
	return s
}

func instance(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return inst
}

// Real results of every built-in tool (a success, a dry run and a failure)
// are valid against the committed schemas, and the schemas reject what
// the envelope forbids.
func TestResultsMatchTheirSchemas(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\n"), 0o644))
	env := tools.Env{SessionID: "s", ToolCallID: "c", Workspace: workspace{root}, Files: localFiles{}, Subagents: subagents{}}
	calls := []struct{ tool, ok, fail string }{
		{"read", `{"path":"a.txt"}`, `{"path":"missing.txt"}`},
		{"write", `{"path":"b.txt","content":"x\n"}`, `{"path":"../b.txt","content":"x"}`},
		{"edit", `{"path":"a.txt","old_text":"one","new_text":"uno"}`, `{"path":"a.txt","old_text":"zzz","new_text":"y"}`},
		{"bash", `{"command":"echo hi"}`, `{"command":""}`},
		{"grep", `{"pattern":"t","context_lines":1}`, `{"pattern":"("}`},
		{"glob", `{"pattern":"*.txt"}`, `{"pattern":"[x"}`},
		{"update_plan", `{"entries":[{"content":"a","status":"pending"}]}`, `{"entries":[{"content":"a","status":"done"}]}`},
		{"spawn_agent", `{"task":"look"}`, `{"task":"look","agent":"nobody"}`},
		{"wait_agent", `{"ids":["sa-1"],"timeout_ms":10}`, `{"ids":["nobody"]}`},
		{"send_input", `{"id":"sa-1","message":"more"}`, `{"id":"nobody","message":"more"}`},
		{"close_agent", `{"id":"sa-1"}`, `{"id":"nobody"}`},
		{"list_agents", `{}`, `{"x":1}`},
		{"merge_agent", `{"id":"sa-1"}`, `{"id":"nobody"}`},
		{"run_workflow", `{"steps":[{"id":"a","task":"look"},{"id":"b","task":"then","depends_on":["a"]}]}`, `{"steps":[{"id":"a","task":"x","depends_on":["zz"]}]}`},
		// report_checkpoint is offered only to a step's child, bound to
		// its step: run_workflow's fake children call it (Start).
		{"report_checkpoint", "", ""},
	}
	envelope := compile(t, ResultsDir+"/tool_result.json")
	dry := compile(t, ResultsDir+"/dry_run_output.json")
	reg := tools.NewRegistry(Catalogue()...)
	require.Len(t, calls, len(reg.All()))
	// run_workflow runs bound to its ports, as the runtime binds each call.
	runWorkflow := workflows.RunWorkflowTool(workflows.Ports{Agents: subagents{}, Children: subagents{}, Evidence: subagents{}})
	get := func(name string) tools.Tool {
		if name == workflows.RunWorkflowName {
			return runWorkflow
		}
		tool, ok := reg.Get(name)
		require.True(t, ok, name)
		return tool
	}
	for _, c := range calls {
		if c.ok == "" {
			continue
		}
		t.Run(c.tool, func(t *testing.T) {
			tool := get(c.tool)
			output := compile(t, fmt.Sprintf("%s/%s_output.json", ResultsDir, c.tool))

			res := tool.DryRun(t.Context(), env, json.RawMessage(c.ok))
			require.True(t, res.OK, "%+v", res.Error)
			require.NoError(t, envelope.Validate(instance(t, res)))
			if _, special := DryRunOutputs[c.tool]; special {
				dry := compile(t, fmt.Sprintf("%s/%s_dry_run_output.json", ResultsDir, c.tool))
				require.NoError(t, dry.Validate(instance(t, res.Output)))
			} else {
				require.NoError(t, dry.Validate(instance(t, res.Output)))
			}

			res = tool.Run(t.Context(), env, json.RawMessage(c.ok))
			require.True(t, res.OK, "%+v", res.Error)
			require.NoError(t, envelope.Validate(instance(t, res)))
			require.NoError(t, output.Validate(instance(t, res.Output)))

			res = tool.Run(t.Context(), env, json.RawMessage(c.fail))
			require.False(t, res.OK)
			require.NoError(t, envelope.Validate(instance(t, res)))
		})
	}

	t.Run("run_workflow partial", func(t *testing.T) {
		res := get("run_workflow").Run(t.Context(), env, json.RawMessage(`{"steps":[{"id":"a","task":"look"},{"id":"b","task":"[fail] this"},{"id":"c","task":"x","depends_on":["b"]}]}`))
		require.False(t, res.OK)
		require.Nil(t, res.Error, "a partial outcome is not a tool error")
		require.NoError(t, envelope.Validate(instance(t, res)))
		require.NoError(t, compile(t, ResultsDir+"/run_workflow_output.json").Validate(instance(t, res.Output)))
	})
	t.Run("report_checkpoint", func(t *testing.T) {
		output := compile(t, ResultsDir+"/report_checkpoint_output.json")
		reports.Lock()
		defer reports.Unlock()
		require.NotEmpty(t, reports.results)
		for i := 0; i < len(reports.results); i += 3 {
			d, ok, bad := reports.results[i], reports.results[i+1], reports.results[i+2]
			require.True(t, d.OK)
			require.NoError(t, envelope.Validate(instance(t, d)))
			require.NoError(t, dry.Validate(instance(t, d.Output)))
			require.True(t, ok.OK)
			require.NoError(t, envelope.Validate(instance(t, ok)))
			require.NoError(t, output.Validate(instance(t, ok.Output)))
			require.False(t, bad.OK)
			require.NoError(t, envelope.Validate(instance(t, bad)))
		}
	})

	for _, bad := range []string{
		`{"ok":true,"error":{"kind":"internal","message":"x"}}`,
		`{"ok":false,"output":"x","error":{"kind":"internal","message":"x"}}`,
		`{"ok":false}`,
		`{"ok":false,"error":{"kind":"oops","message":"x"}}`,
		`{"ok":false,"error":{"kind":"internal"}}`,
		`{"output":"x"}`,
		`{"ok":true,"extra":1}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		require.NoError(t, err)
		require.Error(t, envelope.Validate(inst), bad)
	}
}
