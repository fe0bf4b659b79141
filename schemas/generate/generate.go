// Package generate writes the JSON Schemas of package schemas (the files
// under schemas/tools/ and schemas/results/) from the Go types of the
// built-in tools and their results, by reflection (invopop/jsonschema). Its
// test fails when the committed files drift from the types. The binary never
// imports it: it reads the committed files (schemas.Tool).
package generate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/schemas"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/tools/mcp"
	"github.com/pixir-go/pixir/workflows"
)

// Folders of the generated files, relative to package schemas.
const (
	ToolsDir   = schemas.ToolsDir
	ResultsDir = schemas.ResultsDir
)

// Outputs maps every built-in tool to the type of the output of its
// successful Result. A new built-in tool needs an entry (the test says so).
var Outputs = map[string]any{
	"read":        tools.ReadOutput{},
	"write":       tools.WriteOutput{},
	"edit":        tools.EditOutput{},
	"bash":        tools.BashOutput{},
	"grep":        tools.GrepOutput{},
	"glob":        tools.GlobOutput{},
	"update_plan": tools.UpdatePlanOutput{},
	"spawn_agent": tools.SubagentView{},
	"wait_agent":  tools.WaitOutcome{},
	"send_input":  tools.SubagentView{},
	"close_agent": tools.SubagentView{},
	"list_agents": tools.ListAgentsOutput{},
	"merge_agent": tools.MergeReport{},

	"run_workflow":      workflows.Outcome{},
	"report_checkpoint": workflows.ReportCheckpointOutput{},
}

// DryRunOutputs maps the tools whose dry run says more than
// tools.DryRunOutput to the type of that output.
var DryRunOutputs = map[string]any{
	"run_workflow": workflows.DryRunOutcome{},
	"merge_agent":  tools.MergeReport{},
}

// CommandOutputs maps pixir commands whose --json output is a result
// envelope of their own to the type of its output.
var CommandOutputs = map[string]any{
	"pixir_run": runtime.TurnOutcome{},
}

// Catalogue is every tool Pixir offers: the built-ins of package tools
// and those of package workflows.
func Catalogue() []tools.Tool { return append(tools.Builtins(), workflows.Tools()...) }

// ErrorKinds are the kinds of a failed Result, as DESIGN.md fixes them
// (tools/errors.go; the test checks that the two lists agree).
var ErrorKinds = []tools.ErrorKind{
	tools.ErrInvalidArgs, tools.ErrUnknownTool, tools.ErrPermissionDenied, tools.ErrNotFound, tools.ErrConflict,
	tools.ErrTimeout, tools.ErrCancelled, tools.ErrDetached, tools.ErrProviderError, tools.ErrInternal, tools.ErrBudgetExhausted,
}

// Files returns every generated file by its slash-separated path relative
// to this package:
//
//   - tools/<name>.json: the arguments schema of each built-in tool, exactly
//     as the model is given it (Arguments of its argument type, indented;
//     Tool.Schema is this file, compact);
//   - results/tool_result.json: the envelope of every tool result;
//   - results/<name>_output.json: the output of a successful call of each
//     built-in tool;
//   - results/mcp_tool_output.json: the output of an MCP server's tool;
//   - results/dry_run_output.json: the output of a successful dry run;
//   - results/<name>_dry_run_output.json: that of the tools in
//     DryRunOutputs, whose dry run says more.
func Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, t := range Catalogue() {
		args, err := toolArguments(t)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := json.Indent(&b, args, "", "  "); err != nil {
			return nil, fmt.Errorf("schema of tool %s: %w", t.Name(), err)
		}
		b.WriteByte('\n')
		files[ToolsDir+"/"+t.Name()+".json"] = b.Bytes()

		out, ok := Outputs[t.Name()]
		if !ok {
			return nil, fmt.Errorf("built-in tool %s has no output type in schemas.Outputs; add it", t.Name())
		}
		s := reflectOutput(out)
		s.Title = "Output of " + t.Name()
		s.Description = fmt.Sprintf("The output field of a successful result of the %s tool (not of a dry run).", t.Name())
		if err := put(files, ResultsDir+"/"+t.Name()+"_output.json", s); err != nil {
			return nil, err
		}
		if dry, ok := DryRunOutputs[t.Name()]; ok {
			s := reflectOutput(dry)
			s.Title = "Output of a dry run of " + t.Name()
			s.Description = fmt.Sprintf("The output field of a successful dry run of the %s tool.", t.Name())
			if err := put(files, ResultsDir+"/"+t.Name()+"_dry_run_output.json", s); err != nil {
				return nil, err
			}
		}
	}
	for name, v := range CommandOutputs {
		s := reflectOutput(v)
		s.Title = "Output of " + strings.ReplaceAll(name, "_", " ")
		s.Description = fmt.Sprintf("The output field of the --json result of `%s \"prompt\"` (and of pixir resume).", strings.ReplaceAll(name, "_", " "))
		if err := put(files, ResultsDir+"/"+name+"_output.json", s); err != nil {
			return nil, err
		}
	}
	// MCP tools are the servers', named at run time; their output is one
	// shape, Pixir's.
	m := reflectOutput(mcp.CallOutput{})
	m.Title = "Output of an MCP tool"
	m.Description = "The output field of the result of a call of an MCP server's tool (mcp__<server>__<tool>): the text of its content, " +
		"a line naming each image, audio or resource, and its structured content, each cut at 64 KiB with a marker. " +
		`A result the server marks isError is {"ok":false,"output":…} with this output.`
	if err := put(files, ResultsDir+"/mcp_tool_output.json", m); err != nil {
		return nil, err
	}
	dry := reflectOutput(tools.DryRunOutput{})
	dry.Title = "Output of a dry run"
	dry.Description = "The output field of a successful dry run of any tool: what Run would do."
	if err := put(files, ResultsDir+"/dry_run_output.json", dry); err != nil {
		return nil, err
	}
	if err := put(files, ResultsDir+"/tool_result.json", envelope()); err != nil {
		return nil, err
	}
	return files, nil
}

// Arguments is the JSON Schema of a tool's arguments of v's type, compact,
// as the model is given it: expanded, unreferenced and anonymous (the root
// is the arguments object itself, with no $defs, $ref or $id for a provider
// to trip on), and without $schema, which some providers reject (the
// validator, tools/validate.go, implements 2020-12 for the keywords
// reflection emits).
func Arguments(v any) (json.RawMessage, error) {
	s := reflector().Reflect(v)
	s.Version = ""
	return json.Marshal(s)
}

// toolArguments is Arguments of the argument type of a built-in tool.
func toolArguments(t tools.Tool) (json.RawMessage, error) {
	a, ok := t.(interface{ Arguments() any })
	if !ok {
		return nil, fmt.Errorf("built-in tool %s has no argument type: define it with tools.Define or tools.DefineWith, "+
			"and give a type that wraps the Tool an Arguments method as bashTool has", t.Name())
	}
	b, err := Arguments(a.Arguments())
	if err != nil {
		return nil, fmt.Errorf("schema of tool %s: %w", t.Name(), err)
	}
	return b, nil
}

// conditionsDescription is the description of workflows.Conditions (a
// step's when and a loop's until) as the model reads it.
const conditionsDescription = "A condition on upstream checkpoints, or a list that must all hold. Leaf: {step, status: [checkpoint_ready|partial|failed|needs_orchestrator|held|skipped], " +
	"path: JSON Pointer into the step's payload, with one of equals: V, in: [V…], contains: V (an array holds V), exists: true|false}. " +
	"Without status the step must be checkpoint_ready. Combine with {all: [...]}, {any: [...]}, {not: {...}}."

// reflector reflects argument and result types: the root is the object
// itself and nested types are inlined. Two types are described by hand:
// an ErrorKind is one of ErrorKinds, and workflows.Conditions (one
// condition or a list) and workflows.Converges are objects or arrays, without recursion or
// combinators, which some providers reject (the decoder and
// workflows.Validate check the rest).
func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		ExpandedStruct: true, DoNotReference: true, Anonymous: true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			switch t {
			case reflect.TypeFor[tools.ErrorKind]():
				kinds := make([]any, len(ErrorKinds))
				for i, k := range ErrorKinds {
					kinds[i] = string(k)
				}
				return &jsonschema.Schema{Type: "string", Enum: kinds}
			case reflect.TypeFor[workflows.Conditions]():
				return &jsonschema.Schema{Extras: map[string]any{"type": []string{"object", "array"}}, Description: conditionsDescription}
			case reflect.TypeFor[workflows.Converges]():
				return &jsonschema.Schema{Extras: map[string]any{"type": []string{"object", "array"}}} // described by Loop.Converge
			}
			return nil
		},
	}
}

func reflectOutput(v any) *jsonschema.Schema {
	return reflector().Reflect(v)
}

// envelope is the schema of tools.Result as the model reads it:
// {"ok":true,"output":…}, {"ok":false,"error":{kind,message,details}}, or
// {"ok":false,"output":…} for work that ran but did not succeed (a partial
// workflow: an outcome, not a tool error).
// Results are not sent to providers as schemas, so it may use if/then/else
// to tie ok to error.
func envelope() *jsonschema.Schema {
	s := reflector().Reflect(&tools.Result{})
	s.Title = "Tool result"
	s.Description = `What every tool call returns to the model: {"ok":true,"output":…} on success, ` +
		`{"ok":false,"error":{"kind","message","details"}} on failure, and {"ok":false,"output":…} when the work ran but did not ` +
		`succeed (a partial or failed workflow: its outcome is the output; an MCP tool's own error: its words are the output). The output of each tool is described in its *_output.json file, ` +
		"and that of a dry run in dry_run_output.json."
	okIs := func(v bool) *jsonschema.Schema {
		p := jsonschema.NewProperties()
		p.Set("ok", &jsonschema.Schema{Const: v})
		return &jsonschema.Schema{Properties: p}
	}
	s.If = okIs(true)
	s.Then = &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"error"}}}
	s.Else = &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Required: []string{"error"}, Not: &jsonschema.Schema{Required: []string{"output"}}},
		{Required: []string{"output"}, Not: &jsonschema.Schema{Required: []string{"error"}}},
	}}
	return s
}

func put(files map[string][]byte, name string, s *jsonschema.Schema) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	files[name] = append(b, '\n')
	return nil
}

// Write writes the generated files under dir and removes the .json files
// there that are no longer generated (a tool that was removed).
func Write(dir string) error {
	files, err := Files()
	if err != nil {
		return err
	}
	for _, sub := range []string{ToolsDir, ResultsDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
		stale, err := Stale(dir, sub, files)
		if err != nil {
			return err
		}
		for _, name := range stale {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Stale lists the .json files in dir/sub that files does not have.
func Stale(dir, sub string, files map[string][]byte) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, sub))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, e := range entries {
		name := sub + "/" + e.Name()
		if _, ok := files[name]; !ok && strings.HasSuffix(e.Name(), ".json") {
			stale = append(stale, name)
		}
	}
	return stale, nil
}
