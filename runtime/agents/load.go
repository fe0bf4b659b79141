package agents

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Roots returns the folders Load searches, highest precedence first:
// <projectDir>/.pixir/agents, <projectDir>/.codex/agents,
// <userHome>/.pixir/agents and <userHome>/.codex/agents. An empty
// projectDir or userHome leaves its two folders out, and a folder already
// listed (the project is the home folder) is listed once.
func Roots(projectDir, userHome string) []string {
	var roots []string
	add := func(base string) {
		if base == "" {
			return
		}
		for _, tool := range []string{".pixir", ".codex"} {
			root := filepath.Join(base, tool, "agents")
			if !slices.Contains(roots, root) {
				roots = append(roots, root)
			}
		}
	}
	add(projectDir)
	add(userHome)
	return roots
}

// Load resolves the agents of a project and a user: the files of Roots in
// order, then Builtins. It always returns a registry. The error, when not
// nil, joins a *FileError for every problem of every file left out (and
// for a folder that exists but cannot be listed); the registry then holds
// everything else.
func Load(projectDir, userHome string) (*Registry, error) {
	r := &Registry{}
	byName := map[string]Agent{}
	var errs []error
	for _, root := range Roots(projectDir, userHome) {
		paths, warns, err := agentFiles(root)
		r.warnings = append(r.warnings, warns...)
		if err != nil {
			errs = append(errs, err)
		}
		for _, path := range paths {
			a, warns, ferrs := loadFile(path)
			r.warnings = append(r.warnings, warns...)
			if len(ferrs) > 0 {
				errs = append(errs, ferrs...)
				// The file is what the user means by its agent's name: a
				// definition of lower precedence (a built-in) does not
				// run in its place.
				name := meantName(path)
				if _, defined := byName[name]; defined || r.broken[name] != nil {
					continue
				}
				if r.broken == nil {
					r.broken = map[string]*brokenAgent{}
				}
				r.broken[name] = &brokenAgent{file: path, errs: ferrs}
				if isBuiltin(name) {
					r.warnings = append(r.warnings, Warning{File: path, Message: fmt.Sprintf(
						"agent %q does not load, and the built-in %q is not used in its place: spawning it is refused until the file is fixed", name, name)})
				}
				continue
			}
			if prev, dup := byName[a.Name]; dup {
				r.warnings = append(r.warnings, Warning{File: path, Message: fmt.Sprintf(
					"agent %q is also defined in %s, which takes precedence; this file is ignored", a.Name, prev.Source)})
				continue
			}
			if b := r.broken[a.Name]; b != nil {
				r.warnings = append(r.warnings, Warning{File: path, Message: fmt.Sprintf(
					"agent %q is also defined in %s, which takes precedence and does not load; this file is ignored", a.Name, b.file)})
				continue
			}
			if isBuiltin(a.Name) {
				r.warnings = append(r.warnings, Warning{File: path, Message: fmt.Sprintf(
					"agent %q overrides the built-in %q agent", a.Name, a.Name)})
			}
			byName[a.Name] = a
		}
	}
	for _, b := range builtins() {
		if _, ok := byName[b.Name]; !ok && r.broken[b.Name] == nil {
			byName[b.Name] = b
		}
	}
	r.agents = make([]Agent, 0, len(byName))
	for _, a := range byName {
		r.agents = append(r.agents, a)
	}
	slices.SortFunc(r.agents, func(a, b Agent) int { return strings.Compare(a.Name, b.Name) })
	return r, errors.Join(errs...)
}

// meantName is the agent a file that does not load was meant to define:
// its name key when that can be read and is a valid name, else the name
// of the file (explorer.toml: explorer).
func meantName(path string) string {
	var f struct {
		Name string `toml:"name"`
	}
	if data, err := os.ReadFile(path); err == nil && toml.Unmarshal(data, &f) == nil && ValidName(f.Name) {
		return f.Name
	}
	return strings.TrimSuffix(filepath.Base(path), ".toml")
}

func isBuiltin(name string) bool {
	for _, b := range builtins() {
		if b.Name == name {
			return true
		}
	}
	return false
}

// agentFiles lists the *.toml files of root, sorted by name, and warns
// about every other entry except hidden ones. A missing root has none.
func agentFiles(root string) ([]string, []Warning, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &FileError{File: root, Message: fmt.Sprintf("cannot list the agent folder: %v", unwrapPath(err))}
	}
	var paths []string
	var warns []Warning
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(root, name)
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(path); err == nil {
				isDir = fi.IsDir()
			}
		}
		switch {
		case isDir:
			warns = append(warns, Warning{File: path, Message: "ignored: agent folders are not searched recursively; move its .toml files up"})
		case !strings.HasSuffix(name, ".toml"):
			warns = append(warns, Warning{File: path, Message: "ignored: not a .toml file"})
		default:
			paths = append(paths, path)
		}
	}
	return paths, warns, nil
}

// unwrapPath drops the *fs.PathError wrapper, whose path the caller
// already shows.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// agentFile is the TOML of one agent file.
type agentFile struct {
	Name                  string `toml:"name"`
	Description           string `toml:"description"`
	DeveloperInstructions string `toml:"developer_instructions"`
	Model                 string `toml:"model"`
	ModelReasoningEffort  string `toml:"model_reasoning_effort"`
	SandboxMode           string `toml:"sandbox_mode"`
	Network               string `toml:"network"`
	// AllowedMCPServers is a pointer so that [] (none) differs from no key
	// (all of the parent's).
	AllowedMCPServers *[]string `toml:"allowed_mcp_servers"`
	// The profile: checked by readProfile.
	Tools    any `toml:"tools"`
	WriteSet any `toml:"write_set"`
	Shell    any `toml:"shell"`

	// Keys of Codex agent files that Pixir accepts and ignores.
	NicknameCandidates any `toml:"nickname_candidates"`
	MCPServers         any `toml:"mcp_servers"`
	Skills             any `toml:"skills"`
	WebSearch          any `toml:"web_search"`
}

// allowedKeys are the keys an agent file may use, for error messages.
const allowedKeys = "name, description, developer_instructions, model, model_reasoning_effort, sandbox_mode, network, allowed_mcp_servers, tools, write_set, shell"

// codexKeys are accepted for compatibility with Codex and ignored.
var codexKeys = []string{"nickname_candidates", "mcp_servers", "skills", "web_search"}

// loadFile reads one agent file. It returns the agent, the warnings, and
// every problem that keeps the agent out.
func loadFile(path string) (Agent, []Warning, []error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Agent{}, nil, []error{&FileError{File: path, Message: fmt.Sprintf("cannot read the agent file: %v", unwrapPath(err))}}
	}
	return readAgent(path, data)
}

// readAgent decodes and checks the agent file data read from path.
func readAgent(path string, data []byte) (Agent, []Warning, []error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte order mark is no key
	var f agentFile
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	var unknown []error
	if err := dec.Decode(&f); err != nil {
		// Unknown keys are found once the whole file was decoded: the rest
		// of it is checked too, so that every problem is said at once (a
		// misspelt key must not hide a bad value two lines below).
		var strict *toml.StrictMissingError
		if !errors.As(err, &strict) {
			return Agent{}, nil, decodeErrors(path, err)
		}
		unknown = decodeErrors(path, err)
	}
	pos := locate(data)
	v := validator{path: path, pos: pos, errs: unknown}
	v.required("name", f.Name, `name = "my-agent" (the name spawn_agent takes)`)
	v.required("description", f.Description, `description = "…" (what the agent is for; the parent reads it to choose)`)
	v.required("developer_instructions", f.DeveloperInstructions, `developer_instructions = """…""" (what the child is told before its task)`)
	if f.Name != "" && !ValidName(f.Name) {
		v.add("name", "name %q is not a valid agent name: start with a lowercase letter and use only lowercase letters, digits, '-' and '_', at most %d characters (e.g. %q)",
			f.Name, maxNameLen, suggestName(f.Name))
	}
	v.oneOf("model_reasoning_effort", f.ModelReasoningEffort, reasoningEfforts)
	v.oneOf("sandbox_mode", f.SandboxMode, sandboxModes)
	v.oneOf("network", f.Network, networkSettings)
	profile := v.readProfile(profileFile{Tools: f.Tools, WriteSet: f.WriteSet, Shell: f.Shell}, f.SandboxMode)
	if _, ok := pos["model"]; ok && strings.TrimSpace(f.Model) == "" {
		v.add("model", "model is empty: name a model, or remove the key to use the parent's")
	}
	if len(v.errs) > 0 {
		return Agent{}, nil, v.errs
	}
	var warns []Warning
	for _, k := range codexKeys {
		if p, ok := pos[k]; ok {
			warns = append(warns, Warning{File: path, Message: fmt.Sprintf("%d:%d: %s is a Codex setting Pixir does not use; ignored", p.key.line, p.key.col, k)})
		}
	}
	var mcpServers []string
	if f.AllowedMCPServers != nil {
		mcpServers = append([]string{}, *f.AllowedMCPServers...)
	}
	return Agent{
		AllowedMCPServers:     mcpServers,
		Name:                  f.Name,
		Description:           strings.TrimSpace(f.Description),
		DeveloperInstructions: strings.TrimSpace(f.DeveloperInstructions),
		Model:                 strings.TrimSpace(f.Model),
		ModelReasoningEffort:  f.ModelReasoningEffort,
		SandboxMode:           f.SandboxMode,
		Network:               f.Network,
		Profile:               profile,
		Source:                path,
	}, warns, nil
}

// decodeErrors turns a go-toml error into FileErrors with positions.
func decodeErrors(path string, err error) []error {
	// Checked first: a strict-mode error also unwraps to a DecodeError.
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			de := &strict.Errors[i]
			line, col := de.Position()
			errs = append(errs, &FileError{File: path, Line: line, Column: col, Message: fmt.Sprintf(
				"unknown key %q; an agent file may set %s", strings.Join(de.Key(), "."), allowedKeys)})
		}
		return errs
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return []error{&FileError{File: path, Line: line, Column: col, Message: decodeMessage(de)}}
	}
	return []error{&FileError{File: path, Message: err.Error()}}
}

// decodeMessage says what was wrong in the file's own terms:
// "name: got a TOML integer, want string".
func decodeMessage(de *toml.DecodeError) string {
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	key := strings.Join(de.Key(), ".")
	if key == "" {
		return msg
	}
	if rest, ok := strings.CutPrefix(msg, "cannot decode TOML "); ok {
		if got, _, ok := strings.Cut(rest, " into "); ok {
			return fmt.Sprintf("%s: got a TOML %s, want string", key, got)
		}
	}
	return key + ": " + msg
}

type validator struct {
	path string
	pos  positions
	errs []error
}

// add records a problem at the value of key, or at its key, or at the
// start of the file.
func (v *validator) add(key, format string, args ...any) {
	p := position{line: 1, col: 1}
	if kp, ok := v.pos[key]; ok {
		p = kp.key
		if kp.value.line > 0 {
			p = kp.value
		}
	}
	v.errs = append(v.errs, &FileError{File: v.path, Line: p.line, Column: p.col, Message: fmt.Sprintf(format, args...)})
}

// addItem records a problem at the i-th item of key's array, or at key.
func (v *validator) addItem(key string, i int, format string, args ...any) {
	kp, ok := v.pos[key]
	if !ok || i >= len(kp.items) {
		v.add(key, format, args...)
		return
	}
	p := kp.items[i]
	v.errs = append(v.errs, &FileError{File: v.path, Line: p.line, Column: p.col, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) required(key, value, example string) {
	if strings.TrimSpace(value) != "" {
		return
	}
	if _, ok := v.pos[key]; ok {
		v.add(key, "%s is empty; it is required: %s", key, example)
		return
	}
	v.add(key, "missing required key %s; add %s", key, example)
}

func (v *validator) oneOf(key, value string, allowed []string) {
	if value == "" {
		if _, ok := v.pos[key]; !ok {
			return
		}
	} else if slices.Contains(allowed, value) {
		return
	}
	msg := fmt.Sprintf("%s %q is not one of %s", key, value, strings.Join(allowed, ", "))
	fixed := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(value)), "_", "-")
	if fixed != value && slices.Contains(allowed, fixed) {
		msg += fmt.Sprintf(`; did you mean %q?`, fixed)
	} else {
		msg += "; remove the key to inherit the parent's"
	}
	v.add(key, "%s", msg)
}

// suggestName makes a valid name out of an invalid one, for the error
// message: "Code Reviewer" → "code-reviewer".
func suggestName(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
		default:
			dash = true
		}
	}
	s := b.String()
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "agent-" + s
	}
	s = strings.TrimRight(s, "-")
	if len(s) > maxNameLen {
		s = strings.TrimRight(s[:maxNameLen], "-_")
	}
	return s
}

// position is a 1-based line and column; zero when unknown.
type position struct{ line, col int }

// keyPos is where a top-level key and, for `key = value`, its value are
// written; for an array value, where each of its items is.
type keyPos struct {
	key, value position
	items      []position
}

// positions maps each top-level key of a file to where it is first
// written.
type positions map[string]keyPos

// locate records where the top-level keys of a file are written, including
// the first part of a dotted key or of a table header ([skills]). It is
// best effort: the file has already decoded successfully.
func locate(data []byte) positions {
	ps := positions{}
	var p unstable.Parser
	p.Reset(data)
	topLevel := true
	at := func(n *unstable.Node) position {
		sh := p.Shape(n.Raw)
		return position{line: sh.Start.Line, col: sh.Start.Column}
	}
	for p.NextExpression() {
		e := p.Expression()
		var first *unstable.Node
		parts := 0
		for it := e.Key(); it.Next(); parts++ {
			if first == nil {
				first = it.Node()
			}
		}
		if first == nil {
			continue
		}
		name := string(first.Data)
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			topLevel = false
			if _, seen := ps[name]; !seen {
				ps[name] = keyPos{key: at(first)}
			}
		case unstable.KeyValue:
			if !topLevel {
				continue
			}
			if _, seen := ps[name]; seen {
				continue
			}
			kp := keyPos{key: at(first)}
			if val := e.Value(); parts == 1 && val != nil {
				if val.Raw.Length > 0 {
					kp.value = at(val)
				}
				if val.Kind == unstable.Array {
					for it := val.Children(); it.Next(); {
						if c := it.Node(); c.Raw.Length > 0 {
							kp.items = append(kp.items, at(c))
						} else {
							kp.items = append(kp.items, kp.key)
						}
					}
				}
			}
			ps[name] = kp
		}
	}
	return ps
}
