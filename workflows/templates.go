package workflows

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/pixir-go/pixir/tools"
)

// Template discovery. A template is found by name (its file name without
// .yaml, .yml or .json) in these folders, highest precedence first:
//
//	<project>/.pixir/workflows
//	<project>/.pixir/skills/<skill>/workflows
//	<project>/.claude/skills/<skill>/workflows
//	<project>/.codex/skills/<skill>/workflows
//	<home>/.pixir/workflows
//	<home>/.pixir/skills/<skill>/workflows
//	<home>/.claude/skills/<skill>/workflows
//	<home>/.codex/skills/<skill>/workflows
//
// then the built-ins (the files of builtin/, embedded in the binary). The
// skills of one skills folder are read in the order of their names. As
// for agents: the first definition of a name wins and every later one is
// a Warning naming both files; a file that overrides a built-in is one
// too; other files and subfolders are ignored with a warning (hidden ones
// silently); a file that does not load is left out and reported as a
// *TemplateFileError, the rest still usable. A missing folder is not an
// error. Nothing is read at program start.

//go:embed builtin/*.yaml
var builtinFS embed.FS

// TemplateWarning is something about the template files a user should
// see that does not stop the others from loading.
type TemplateWarning struct {
	File    string `json:"file"`
	Message string `json:"message"`
}

func (w TemplateWarning) String() string { return w.File + ": " + w.Message }

// TemplateFileError is a template file that does not load.
type TemplateFileError struct {
	File    string `json:"file"`
	Message string `json:"message"`
	err     error  // the cause, when it is a *tools.Failure with details
}

func (e *TemplateFileError) Error() string {
	if se, ok := errors.AsType[*SyntaxError](e.err); ok && se.Line > 0 {
		return fmt.Sprintf("%s:%d: not valid %s: %s", e.File, se.Line, se.what(), se.Msg)
	}
	return e.File + ": " + e.Message
}

// Unwrap is the cause: an invalid spec's *tools.Failure.
func (e *TemplateFileError) Unwrap() error { return e.err }

// TemplateRegistry is the resolved set of templates of one project and
// user: each name once, the highest-precedence definition winning.
type TemplateRegistry struct {
	templates []*Template // sorted by name
	warnings  []TemplateWarning
	// broken are the names whose highest-precedence file does not load:
	// no file further down, nor a built-in, stands in for it, so a typo in
	// a project's survey.yaml is said, not run as the built-in survey.
	broken map[string]*TemplateFileError
}

// Broken returns the error of the file that defines name and does not
// load, when that file would have won.
func (r *TemplateRegistry) Broken(name string) (*TemplateFileError, bool) {
	e, ok := r.broken[name]
	return e, ok
}

// Get returns the template called name.
func (r *TemplateRegistry) Get(name string) (*Template, bool) {
	i, ok := slices.BinarySearchFunc(r.templates, name, func(t *Template, n string) int { return strings.Compare(t.Name, n) })
	if !ok {
		return nil, false
	}
	return r.templates[i], true
}

// All returns every template, sorted by name.
func (r *TemplateRegistry) All() []*Template { return slices.Clone(r.templates) }

// Warnings returns the warnings, in the order the files were read.
func (r *TemplateRegistry) Warnings() []TemplateWarning { return slices.Clone(r.warnings) }

// Names are the templates' names, sorted.
func (r *TemplateRegistry) Names() []string {
	names := make([]string, len(r.templates))
	for i, t := range r.templates {
		names[i] = t.Name
	}
	return names
}

// TemplateRoots are the folders LoadTemplates reads, highest precedence
// first (see above). An empty project or home leaves its folders out;
// skill folders are listed as they are on disk now.
func TemplateRoots(project, home string) []string {
	var roots []string
	add := func(dir string) {
		if !slices.Contains(roots, dir) {
			roots = append(roots, dir)
		}
	}
	for _, base := range []string{project, home} {
		if base == "" {
			continue
		}
		add(filepath.Join(base, ".pixir", "workflows"))
		for _, tool := range []string{".pixir", ".claude", ".codex"} {
			skills := filepath.Join(base, tool, "skills")
			entries, err := os.ReadDir(skills)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					continue
				}
				dir := filepath.Join(skills, e.Name(), "workflows")
				if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
					add(dir)
				}
			}
		}
	}
	return roots
}

// LoadTemplates resolves the templates of a project and a user: the files
// of TemplateRoots, then the built-ins. It always returns a registry; the
// error, when not nil, joins a *TemplateFileError for each file left out.
func LoadTemplates(project, home string) (*TemplateRegistry, error) {
	r := &TemplateRegistry{}
	byName := map[string]*Template{}
	var errs []error
	builtins := map[string]bool{}
	for _, t := range builtinTemplates() {
		builtins[t.Name] = true
	}
	for _, root := range TemplateRoots(project, home) {
		files, warns, err := templateFiles(root)
		r.warnings = append(r.warnings, warns...)
		if err != nil {
			errs = append(errs, err)
		}
		for _, file := range files {
			name := templateName(file)
			if prev, ok := r.broken[name]; ok {
				r.warnings = append(r.warnings, TemplateWarning{File: file, Message: fmt.Sprintf(
					"template %q is also defined in %s, which takes precedence and does not load; this file is ignored", name, prev.File)})
				continue
			}
			t, err := loadTemplateFile(file)
			if err != nil {
				errs = append(errs, err)
				if fe, ok := errors.AsType[*TemplateFileError](err); ok && IsTemplateName(name) && byName[name] == nil {
					if r.broken == nil {
						r.broken = map[string]*TemplateFileError{}
					}
					r.broken[name] = fe
				}
				continue
			}
			if prev, dup := byName[t.Name]; dup {
				r.warnings = append(r.warnings, TemplateWarning{File: file, Message: fmt.Sprintf(
					"template %q is also defined in %s, which takes precedence; this file is ignored", t.Name, prev.Source)})
				continue
			}
			if builtins[t.Name] {
				r.warnings = append(r.warnings, TemplateWarning{File: file, Message: fmt.Sprintf(
					"template %q overrides the built-in %q template", t.Name, t.Name)})
			}
			byName[t.Name] = t
		}
	}
	for _, t := range builtinTemplates() {
		if _, ok := byName[t.Name]; !ok && r.broken[t.Name] == nil {
			byName[t.Name] = t
		}
	}
	for _, t := range byName {
		r.templates = append(r.templates, t)
	}
	slices.SortFunc(r.templates, func(a, b *Template) int { return strings.Compare(a.Name, b.Name) })
	return r, errors.Join(errs...)
}

// builtinTemplates parses the embedded templates; a broken one is a bug
// that the tests catch, so it panics.
func builtinTemplates() []*Template {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		panic(err)
	}
	var out []*Template
	for _, e := range entries {
		b, err := builtinFS.ReadFile(path.Join("builtin", e.Name()))
		if err != nil {
			panic(err)
		}
		raw, err := DecodeFile(e.Name(), b)
		if err != nil {
			panic(fmt.Sprintf("workflows: built-in template %s: %v", e.Name(), err))
		}
		t, err := ParseTemplate(templateName(e.Name()), SourceBuiltin, raw)
		if err != nil {
			panic(fmt.Sprintf("workflows: built-in template %s: %v", e.Name(), err))
		}
		out = append(out, t)
	}
	return out
}

// isTemplateExt says whether ext (lowercase) is a workflow file's.
func isTemplateExt(ext string) bool { return ext == ".yaml" || ext == ".yml" || ext == ".json" }

// templateName is a file's template name: its name without the extension.
func templateName(file string) string {
	base := filepath.Base(file)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// IsTemplateName reports whether s can name a template (and is not a
// path): a lowercase letter, then lowercase letters, digits, - or _.
func IsTemplateName(s string) bool { return IDPattern().MatchString(s) }

// templateFiles lists root's workflow files, sorted, warning about the
// rest. A missing root has none.
func templateFiles(root string) ([]string, []TemplateWarning, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &TemplateFileError{File: root, Message: fmt.Sprintf("cannot list the workflow folder: %v", errors.Unwrap(err))}
	}
	var files []string
	var warns []TemplateWarning
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		file := filepath.Join(root, name)
		switch {
		case e.IsDir():
			warns = append(warns, TemplateWarning{File: file, Message: "ignored: workflow folders are not searched recursively"})
		case !isTemplateExt(strings.ToLower(filepath.Ext(name))):
			warns = append(warns, TemplateWarning{File: file, Message: "ignored: not a workflow file (.yaml, .yml or .json)"})
		default:
			files = append(files, file)
		}
	}
	return files, warns, nil
}

// loadTemplateFile reads one template file.
func loadTemplateFile(file string) (*Template, error) {
	name := templateName(file)
	if !IsTemplateName(name) {
		return nil, &TemplateFileError{File: file, Message: fmt.Sprintf("%q cannot name a template: rename the file to a lowercase letter, then lowercase letters, digits, - or _ (and .yaml, .yml or .json)", name)}
	}
	t, err := ReadTemplateFile(file)
	if err != nil {
		return nil, err
	}
	t.Name = name
	return t, nil
}

// ReadTemplateFile reads a workflow file (a template or a plain workflow:
// one without params is a template without parameters) from a path. Its
// name is its file name without the extension.
func ReadTemplateFile(file string) (*Template, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, &TemplateFileError{File: file, Message: fmt.Sprintf("cannot read it: %v", errors.Unwrap(err))}
	}
	raw, err := DecodeFile(file, b)
	if err != nil {
		return nil, &TemplateFileError{File: file, Message: err.Error(), err: err}
	}
	t, err := ParseTemplate(templateName(file), file, raw)
	if err != nil {
		msg := err.Error()
		if f, ok := errors.AsType[*tools.Failure](err); ok {
			msg = f.Message
		}
		return nil, &TemplateFileError{File: file, Message: msg, err: err}
	}
	return t, nil
}

// DecodeFile reads a workflow file's bytes as JSON: a .json file (or one
// that starts with {) as it is, anything else as YAML, keys in their
// written order.
func DecodeFile(name string, b []byte) (json.RawMessage, error) {
	b = bytes.TrimPrefix(b, []byte("\ufeff")) // a byte order mark is not JSON
	trimmed := bytes.TrimSpace(b)
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".json" || (ext != ".yaml" && ext != ".yml" && len(trimmed) > 0 && trimmed[0] == '{') {
		if err := duplicateJSONKey(trimmed); err != nil {
			return nil, err
		}
		return trimmed, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlSyntaxError(err)
	}
	c := yamlConverter{budget: maxYAMLNodes}
	if err := c.toJSON(&doc); err != nil {
		return nil, err
	}
	return c.buf.Bytes(), nil
}

// maxYAMLNodes bounds the nodes a YAML file's conversion visits, aliases
// and merge keys followed each time: a file of a few lines whose aliases
// name lists of aliases (or merge keys of merges) grows by a factor per
// level, hours and gigabytes for a file under 1 KB. A workflow of 10,000
// steps of five keys each visits 110,000.
const maxYAMLNodes = 1_000_000

// yamlConverter writes YAML nodes as JSON into buf, each node it visits
// counted against budget.
type yamlConverter struct {
	buf    bytes.Buffer
	budget int
}

// visit counts one node; past the budget it is a *SyntaxError at n.
func (c *yamlConverter) visit(n *yaml.Node) error {
	if c.budget--; c.budget < 0 {
		return &SyntaxError{Line: n.Line, Msg: fmt.Sprintf("aliases (*name) and merge keys (<<) expand to more than %d values", maxYAMLNodes)}
	}
	return nil
}

// duplicateJSONKey is a *SyntaxError at the first key written twice in
// one object of b (JSON would keep the last, dropping the first unsaid),
// or nil. Text that is not JSON is left to the decoder that reads it.
func duplicateJSONKey(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	type object struct {
		seen   map[string]int
		expect bool // the next string is a key
	}
	var stack []*object
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil //nolint:nilerr // the end, or text that is not JSON: its decoder says so
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.expect {
			line := 1 + bytes.Count(b[:dec.InputOffset()], []byte("\n"))
			if first, dup := top.seen[key]; dup {
				return &SyntaxError{Line: line, JSON: true, Msg: fmt.Sprintf("key %q is written twice in one object (first at line %d); keep one", key, first)}
			}
			top.seen[key] = line
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{seen: map[string]int{}, expect: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		}
		if len(stack) > 0 && stack[len(stack)-1] != nil {
			stack[len(stack)-1].expect = true // a value ended: a key comes next
		}
	}
}

// toJSON writes a YAML node as JSON, keeping the order of mapping keys
// (json.Marshal of a map would sort them, and a template's parameters are
// listed as written).
func (c *yamlConverter) toJSON(n *yaml.Node) error {
	if err := c.visit(n); err != nil {
		return err
	}
	buf := &c.buf
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return c.toJSON(n.Content[0])
	case yaml.AliasNode:
		return c.toJSON(n.Alias)
	case yaml.MappingNode:
		pairs, err := c.mappingPairs(n, 0)
		if err != nil {
			return err
		}
		buf.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				buf.WriteByte(',')
			}
			key, _ := json.Marshal(p.k.Value)
			buf.Write(key)
			buf.WriteByte(':')
			if err := c.toJSON(p.v); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := c.toJSON(item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: the value %q does not map to JSON: %w", n.Line, n.Value, err)
		}
		buf.Write(b)
	default:
		return fmt.Errorf("line %d: unexpected YAML", n.Line)
	}
	return nil
}

// yamlPair is a key of a mapping and its value.
type yamlPair struct{ k, v *yaml.Node }

// mappingPairs are the keys and values of mapping n as written, each merge
// key (<<: *defaults, or a list of them) replaced by the pairs of the
// mappings it names that no key written in n, nor an earlier merge, sets.
// A key written twice in n is an error: YAML requires a mapping's keys to
// be unique, and JSON would keep the last (a second steps: would drop the
// first list unsaid).
func (c *yamlConverter) mappingPairs(n *yaml.Node, depth int) ([]yamlPair, error) {
	if err := c.visit(n); err != nil {
		return nil, err
	}
	if depth > 32 {
		return nil, &SyntaxError{Line: n.Line, Msg: "merge keys (<<) nested more than 32 deep"}
	}
	written := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if isMergeKey(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a key must be a string, not a %s", k.Line, kindName(k))
		}
		if first, dup := written[k.Value]; dup {
			return nil, &SyntaxError{Line: k.Line, Msg: fmt.Sprintf("key %q is written twice in one mapping (first at line %d); keep one", k.Value, first)}
		}
		written[k.Value] = k.Line
	}
	merged := map[string]bool{}
	pairs := make([]yamlPair, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !isMergeKey(k) {
			pairs = append(pairs, yamlPair{k, v})
			continue
		}
		sources := []*yaml.Node{v}
		if d := dealias(v); d.Kind == yaml.SequenceNode {
			sources = d.Content
		}
		for _, src := range sources {
			m := dealias(src)
			if m.Kind != yaml.MappingNode {
				return nil, &SyntaxError{Line: k.Line, Msg: fmt.Sprintf("the merge key << takes a mapping (<<: *defaults) or a list of them, not a %s", kindName(m))}
			}
			from, err := c.mappingPairs(m, depth+1)
			if err != nil {
				return nil, err
			}
			for _, p := range from {
				if _, set := written[p.k.Value]; set || merged[p.k.Value] {
					continue
				}
				merged[p.k.Value] = true
				pairs = append(pairs, p)
			}
		}
	}
	return pairs, nil
}

// isMergeKey reports whether k is YAML's merge key: << unquoted.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// dealias is the node an alias names (n itself when it is none).
func dealias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	}
	return "value"
}

// Templates finds templates by name for run_workflow.
type Templates interface {
	Template(name string) (*Template, error)
}

// ResolveTemplate is w itself when it gives steps, or the instance of the
// template it names, made with its args, keeping what a call may add to
// a template (dry_run, resume_from, budget). Every problem is an
// invalid_args or not_found *tools.Failure.
func ResolveTemplate(w *Workflow, templates Templates) (*Workflow, error) {
	if w.Template == "" || w.instantiated {
		if len(w.Args) > 0 && w.Template == "" {
			return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: "args are the parameters of a template: give template too, or leave args out"}
		}
		return w, nil
	}
	var extra []string
	if len(w.Steps) > 0 {
		extra = append(extra, "steps")
	}
	if len(w.Loops) > 0 {
		extra = append(extra, "loops")
	}
	if w.MaxConcurrency != 0 || w.zeroConcurrency {
		extra = append(extra, "max_concurrency")
	}
	if w.TimeoutMS != 0 {
		extra = append(extra, "timeout_ms")
	}
	if w.FailurePolicy != "" {
		extra = append(extra, "failure_policy")
	}
	if w.Merge != "" {
		extra = append(extra, "merge")
	}
	if len(extra) > 0 {
		return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: fmt.Sprintf(
			"with template, give only args (and dry_run, resume_from, budget): %s belong to the template", strings.Join(extra, ", "))}
	}
	if templates == nil {
		return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: "this session has no workflow templates; give steps"}
	}
	t, err := templates.Template(w.Template)
	if err != nil {
		return nil, err
	}
	args := map[string]any{}
	if len(bytes.TrimSpace(w.Args)) > 0 && string(bytes.TrimSpace(w.Args)) != "null" {
		v, err := decodeValue(w.Args)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: fmt.Sprintf("args must be an object of the parameters of %s, e.g. {%q: …}", t.Signature(), firstParam(t))}
		}
		args = obj
	}
	inst, err := t.Instantiate(args)
	if err != nil {
		return nil, err
	}
	inst.DryRun = w.DryRun || w.ValidateOnly || inst.DryRun
	if w.ResumeFrom != "" {
		inst.ResumeFrom = w.ResumeFrom
	}
	if w.Budget != nil {
		inst.Budget = w.Budget
	}
	if w.Name != "" {
		inst.Name = w.Name
	}
	return inst, nil
}

func firstParam(t *Template) string {
	if len(t.Params) == 0 {
		return "name"
	}
	return t.Params[0].Name
}

// RegistryTemplates is Templates over a loaded registry.
type RegistryTemplates struct{ Registry *TemplateRegistry }

// Template returns the template called name, or a not_found failure
// naming the ones there are.
func (r RegistryTemplates) Template(name string) (*Template, error) {
	if t, ok := r.Registry.Get(name); ok {
		return t, nil
	}
	if fe, ok := r.Registry.Broken(name); ok {
		return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: fmt.Sprintf("the workflow template %q does not load; fix its file (pixir workflows shows its problems): %s",
			name, strings.ReplaceAll(fe.Error(), "\n", "; "))}
	}
	return nil, &tools.Failure{Kind: tools.ErrNotFound, Message: fmt.Sprintf("there is no workflow template named %q; the templates here: %s", name, strings.Join(r.Registry.Names(), ", "))}
}

// DirTemplates are the templates of a project and a user's home folder,
// read at each lookup, so a file saved during a session is found.
type DirTemplates struct{ Project, Home string }

// Template returns the template called name; when it is not found and
// some template files do not load, the failure says which.
func (d DirTemplates) Template(name string) (*Template, error) {
	reg, loadErr := LoadTemplates(d.Project, d.Home)
	t, err := RegistryTemplates{reg}.Template(name)
	if _, broken := reg.Broken(name); err != nil && loadErr != nil && !broken {
		f := tools.AsFailure(err)
		f.Message += "; some template files do not load (pixir workflows shows them): " + strings.ReplaceAll(loadErr.Error(), "\n", "; ")
		return nil, f
	}
	return t, err
}
