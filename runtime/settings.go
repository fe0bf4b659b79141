package runtime

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pixir-go/pixir/runtime/prompt"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/tools/mcp"
)

// Settings is $PIXIR_HOME/config.toml. Flags and environment variables
// override it; it overrides the built-in defaults.
type Settings struct {
	// Profile names the [profiles.NAME] table used when neither --profile
	// nor PIXIR_PROFILE names one.
	Profile string `toml:"profile"`
	// The top-level provider settings; a profile overrides what it sets.
	ProviderSettings
	MaxTurnRequests int `toml:"max_turn_requests"`
	// Agents bounds Subagents: [agents] max_threads, max_depth, timeout_ms.
	Agents SubagentLimits `toml:"agents"`
	// Sandbox configures the sandbox of the tools' commands: [sandbox]
	// env, writable, landlock.
	Sandbox sandbox.Config `toml:"sandbox"`
	// Prompt configures the system prompt: [prompt] file, max_instructions.
	Prompt PromptSettings `toml:"prompt"`
	// Budget limits what model calls may spend: [budget].
	Budget BudgetSettings `toml:"budget"`
	// ModelInfo describes models by name: [model_info."NAME"]
	// context_window, input_price, output_price.
	ModelInfo map[string]ModelInfo `toml:"model_info"`
	// Compaction says when and how long conversations are compacted:
	// [compaction].
	Compaction CompactionSettings `toml:"compaction"`
	// Profiles are named sets of provider settings ("local", "hosted").
	Profiles map[string]ProviderSettings `toml:"profiles"`
	// MCP holds defaults for every MCP server: [mcp].
	MCP MCPSettings `toml:"mcp"`
	// MCPServers are started for every session: [mcp_servers.NAME], the
	// table Codex uses.
	MCPServers map[string]MCPServerSettings `toml:"mcp_servers"`
	// Path is the file read; empty when there was none.
	Path string `toml:"-"`
}

// ProviderSettings choose and configure the model provider. They appear at
// the top level of config.toml and in each [profiles.NAME] table.
type ProviderSettings struct {
	// Provider names the model provider: "scripted" (the offline default),
	// "openai" (any OpenAI-compatible server) or "anthropic".
	Provider string `toml:"provider"`
	Model    string `toml:"model"`
	// Models a client may switch between; Model is added when missing.
	Models []string `toml:"models"`
	// BaseURL is the API root of the openai or anthropic provider.
	BaseURL string `toml:"base_url"`
	// APIKeyEnv names the environment variable holding the API key, instead
	// of OPENAI_API_KEY or ANTHROPIC_API_KEY. Keys never live in the file.
	APIKeyEnv string `toml:"api_key_env"`
	// ContextWindow is the model's context size in tokens, shown to editors
	// with the usage.
	ContextWindow int `toml:"context_window"`
	// MaxTokens bounds each answer.
	MaxTokens int `toml:"max_tokens"`
	// ReasoningEffort asks reasoning models to think more or less (the
	// key Codex uses): none, minimal, low, medium, high or xhigh.
	ReasoningEffort string `toml:"model_reasoning_effort"`
	// ConnectTimeout, IdleTimeout and MaxRetries tune the request policy.
	ConnectTimeout Duration `toml:"connect_timeout"`
	IdleTimeout    Duration `toml:"idle_timeout"`
	MaxRetries     *int     `toml:"max_retries"`
	// MaxAnswerSize caps one answer (text, reasoning and tool call
	// arguments): a model stuck in a loop is stopped there.
	MaxAnswerSize ByteSize         `toml:"max_answer_size"`
	Scripted      ScriptedSettings `toml:"scripted"`
}

// PromptSettings are the [prompt] table of config.toml.
type PromptSettings struct {
	// File replaces Pixir's guidance, the first part of the system prompt
	// (the environment, the instruction files and a Subagent's part
	// follow it still). A relative path is relative to config.toml's
	// folder; "~/" is the user's home.
	File string `toml:"file"`
	// MaxInstructions bounds the instruction files (AGENTS.md) together.
	MaxInstructions ByteSize `toml:"max_instructions"`
}

// Options reads the replacement guidance, if any, into prompt options.
// home is the folder of config.toml.
func (p PromptSettings) Options(home string) (prompt.Options, error) {
	o := prompt.Options{MaxInstructions: int(min(p.MaxInstructions.Bytes, 1<<30))}
	if p.File == "" {
		return o, nil
	}
	path := p.File
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(h, rest)
		}
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(home, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return o, fmt.Errorf("[prompt] file: %w; fix the path in config.toml or remove the key to use Pixir's own guidance", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return o, fmt.Errorf("[prompt] file %s is empty; write the guidance in it or remove the key to use Pixir's own", path)
	}
	o.Base, o.BaseSource = string(data), path
	return o, nil
}

// ScriptedSettings configure the offline scripted provider.
type ScriptedSettings struct {
	// Script is a TOML script file; empty means the embedded default.
	Script string `toml:"script"`
}

// Duration is a TOML string such as "90s" or "2m".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration with a unit, such as \"90s\" or \"2m\", got %s", b)
	}
	if v < 0 {
		return fmt.Errorf("a duration cannot be negative, got %s", b)
	}
	d.Duration = v
	return nil
}

// ByteSize is a TOML string such as "8MiB", "512KiB", "2MB" or "1000B".
type ByteSize struct{ Bytes int64 }

// byteUnits are the units a ByteSize may carry, longest first.
var byteUnits = []struct {
	suffix string
	n      int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"kB", 1e3}, {"B", 1}}

// UnmarshalText parses a size with its unit.
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n > (1<<62)/u.n {
			break
		}
		if n <= 0 {
			return fmt.Errorf("a size must be positive, got %s", text)
		}
		b.Bytes = n * u.n
		return nil
	}
	return fmt.Errorf("want a size with a unit, such as \"8MiB\", \"512KiB\" or \"100000B\", got %s", text)
}

// For returns the settings that hold for provider name. The model, the
// models, the base URL, the key variable and the context window belong to
// the provider the settings name: when they name another one, those are
// left out, so that they never send one provider's model or key to
// another's server. Settings that name no provider hold for any.
func (p ProviderSettings) For(name string) ProviderSettings {
	if p.Provider == "" || p.Provider == name {
		return p
	}
	p.Provider = name
	p.Model, p.Models, p.BaseURL, p.APIKeyEnv, p.ContextWindow = "", nil, "", "", 0
	return p
}

// over returns base with every field that o sets replacing it. A profile
// that names another provider than base inherits none of base's
// provider-bound settings (see For).
func (o ProviderSettings) over(base ProviderSettings) ProviderSettings {
	if o.Provider != "" {
		base = base.For(o.Provider)
	}
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	base.Provider = pick(o.Provider, base.Provider)
	base.Model = pick(o.Model, base.Model)
	base.BaseURL = pick(o.BaseURL, base.BaseURL)
	base.APIKeyEnv = pick(o.APIKeyEnv, base.APIKeyEnv)
	base.Scripted.Script = pick(o.Scripted.Script, base.Scripted.Script)
	base.ReasoningEffort = pick(o.ReasoningEffort, base.ReasoningEffort)
	if o.Models != nil {
		base.Models = o.Models
	}
	if o.ContextWindow > 0 {
		base.ContextWindow = o.ContextWindow
	}
	if o.MaxTokens > 0 {
		base.MaxTokens = o.MaxTokens
	}
	if o.ConnectTimeout.Duration > 0 {
		base.ConnectTimeout = o.ConnectTimeout
	}
	if o.IdleTimeout.Duration > 0 {
		base.IdleTimeout = o.IdleTimeout
	}
	if o.MaxRetries != nil {
		base.MaxRetries = o.MaxRetries
	}
	if o.MaxAnswerSize.Bytes > 0 {
		base.MaxAnswerSize = o.MaxAnswerSize
	}
	return base
}

// WithProfile returns the provider settings of profile name laid over the
// top-level ones. An empty name means the file's own `profile`; when that
// is empty too, the top-level settings are returned as they are. It also
// returns the name of the profile used.
func (s Settings) WithProfile(name string) (ProviderSettings, string, error) {
	if name == "" {
		name = s.Profile
	}
	if name == "" {
		return s.ProviderSettings, "", nil
	}
	p, ok := s.Profiles[name]
	if !ok {
		where := "config.toml"
		if s.Path != "" {
			where = s.Path
		}
		names := make([]string, 0, len(s.Profiles))
		for n := range s.Profiles {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(names) == 0 {
			return ProviderSettings{}, "", fmt.Errorf("unknown profile %q: %s defines no [profiles.NAME] tables", name, where)
		}
		return ProviderSettings{}, "", fmt.Errorf("unknown profile %q: %s defines %s", name, where, strings.Join(names, ", "))
	}
	return p.over(s.ProviderSettings), name, nil
}

// HomeDir is $PIXIR_HOME, or ~/.pixir.
func HomeDir() (string, error) {
	if h := os.Getenv("PIXIR_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a home directory (set PIXIR_HOME): %w", err)
	}
	return filepath.Join(home, ".pixir"), nil
}

// LoadSettings reads <home>/config.toml. A missing file is not an error; an
// unreadable or invalid one is, with the line and column of each problem:
// every one the file has (one when it is not TOML at all).
func LoadSettings(home string) (Settings, error) {
	path := filepath.Join(home, "config.toml")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, nil
	}
	if err != nil {
		// "reading X: read X: is a directory" named the file twice.
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		return Settings{}, fmt.Errorf("%s: cannot read it: %w; fix it, or move it away to use the defaults", path, err)
	}
	// A byte order mark (Windows editors write one) is no key: go-toml
	// would refuse the file at 1:1 with "invalid character … 'ï'".
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	s, problems, blanked := decodeSettings(path, data)
	if s == nil {
		return Settings{}, errors.Join(problems...)
	}
	s.Path = path
	if errs := s.validate(); len(errs) > 0 {
		keys := locateSettingsKeys(data)
		for _, err := range errs {
			if aboutBlanked(err, blanked) {
				continue
			}
			problems = append(problems, placeSettingsError(path, keys, err))
		}
	}
	if s.Profile != "" {
		if _, _, err := s.WithProfile(s.Profile); err != nil {
			if p, ok := locateSettingsKeys(data)["profile"]; ok {
				err = fmt.Errorf("%s:%d:%d: %w", path, p.line, p.col, err)
			}
			problems = append(problems, err)
		}
	}
	if len(problems) > 0 {
		return Settings{}, errors.Join(inFileOrder(path, problems)...)
	}
	return *s, nil
}

// inFileOrder sorts problems by the line and column they start with
// (after "path:"); those without one go last, in the order they came.
func inFileOrder(path string, problems []error) []error {
	var all []error
	for _, p := range problems {
		all = append(all, joined(p)...)
	}
	pos := func(err error) (int, int) {
		var line, col int
		rest, ok := strings.CutPrefix(err.Error(), path+":")
		if _, scanErr := fmt.Sscanf(rest, "%d:%d:", &line, &col); !ok || scanErr != nil {
			return math.MaxInt, 0
		}
		return line, col
	}
	slices.SortStableFunc(all, func(a, b error) int {
		la, ca := pos(a)
		lb, cb := pos(b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ca, cb))
	})
	return all
}

// decodeSettings decodes config.toml, and every problem of it: go-toml
// stops at the first value it cannot decode, so that value's key = value
// is left out (withoutSettingsKey) and the rest decoded again, until the
// rest decodes. The settings are nil when the file is not TOML (its one
// problem is where it stops being TOML); otherwise they hold every value that decoded,
// for validate to check. blanked are the keys left out (["mcp_servers", "foo", "command"]).
func decodeSettings(path string, data []byte) (_ *Settings, problems []error, blanked [][]string) {
	for {
		var s Settings
		err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&s)
		if err == nil {
			return &s, problems, blanked
		}
		if len(problems) == 0 {
			// go-toml decodes as it parses: a value of the wrong type
			// before a line that is not TOML would hide that line.
			if syntaxErr := toml.Unmarshal(data, new(map[string]any)); syntaxErr != nil {
				_, problem := settingsDecodeError(path, data, syntaxErr)
				return nil, []error{problem}, nil
			}
		}
		key, problem := settingsDecodeError(path, data, err)
		problems = append(problems, problem)
		if _, unknown := errors.AsType[*toml.StrictMissingError](err); unknown {
			// go-toml reports unknown keys after decoding all the others.
			return &s, problems, blanked
		}
		if key == nil {
			return nil, problems, nil
		}
		rest, ok := withoutSettingsKey(data, key)
		if !ok {
			return nil, problems, nil
		}
		data = rest
		blanked = append(blanked, key)
	}
}

// aboutBlanked reports whether a validation problem comes of a value
// decodeSettings left out for its type, a problem already: one of a whole
// table holding such a value ("[mcp_servers.foo]: … neither a command nor
// a url" for command = 42), or a cost budget without a price when a price
// was left out (not another key of model_info: the price is still
// missing, and said now rather than one round later).
func aboutBlanked(err error, blanked [][]string) bool {
	m := keyOfMessageRE().FindStringSubmatch(err.Error())
	for _, key := range blanked {
		if errors.Is(err, errNoPrice) && key[0] == "model_info" && slices.Contains([]string{"input_price", "output_price"}, key[len(key)-1]) {
			return true
		}
		// By key, not by text: "mcp_servers.a." begins the text of a
		// key of server "a.b" too.
		if m != nil && m[1] != "" && m[2] == "" {
			table := splitTOMLKey(m[1])
			if len(key) > len(table) && slices.Equal(key[:len(table)], table) {
				return true
			}
		}
	}
	return false
}

// validate checks the values of a decoded config.toml, and returns every
// problem; each error starts with the key it is about, which LoadSettings
// turns into a position.
func (s Settings) validate() []error {
	var errs []error
	if s.MaxTurnRequests < 0 {
		errs = append(errs, fmt.Errorf("max_turn_requests must be positive, got %d", s.MaxTurnRequests))
	}
	for _, kv := range []struct {
		key string
		v   int
	}{{"max_threads", s.Agents.MaxThreads}, {"max_depth", s.Agents.MaxDepth}, {"timeout_ms", s.Agents.TimeoutMS},
		{"max_subagents", s.Agents.MaxSubagents}, {"wait_timeout_ms", s.Agents.WaitTimeoutMS}} {
		if kv.v < 0 {
			errs = append(errs, fmt.Errorf("[agents] %s must be positive, got %d", kv.key, kv.v))
		}
	}
	errs = append(errs, s.validateCost()...)
	errs = append(errs, joined(s.Sandbox.Validate())...)
	errs = append(errs, s.ProviderSettings.validate()...)
	for _, name := range slices.Sorted(maps.Keys(s.Profiles)) {
		for _, err := range s.Profiles[name].validate() {
			errs = append(errs, fmt.Errorf("profiles.%s.%w", name, err))
		}
	}
	return append(errs, joined(s.validateMCP())...)
}

// joined is the errors errors.Join made err of, or err alone.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok && reflect.TypeOf(err) == joinType {
		return j.Unwrap()
	}
	return []error{err}
}

// joinType is the type of errors.Join's errors (fmt.Errorf with several
// %w has an Unwrap() []error too, and is one error).
var joinType = reflect.TypeOf(errors.Join(errors.New("")))

func (p ProviderSettings) validate() []error {
	var errs []error
	if p.ContextWindow < 0 {
		errs = append(errs, fmt.Errorf("context_window must be positive, got %d", p.ContextWindow))
	}
	if p.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max_tokens must be positive, got %d", p.MaxTokens))
	}
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("max_retries must be 0 or more, got %d", *p.MaxRetries))
	}
	if p.ReasoningEffort != "" && !slices.Contains(provider.ReasoningEfforts, p.ReasoningEffort) {
		errs = append(errs, fmt.Errorf("model_reasoning_effort %q is not one of %s", p.ReasoningEffort, strings.Join(provider.ReasoningEfforts, ", ")))
	}
	return errs
}

// MCPSettings are the [mcp] table: timeouts for every MCP server that sets
// none, the editor's servers included.
type MCPSettings struct {
	ToolTimeout    Duration `toml:"tool_timeout"`
	StartupTimeout Duration `toml:"startup_timeout"`
}

// MCPServerSettings are one [mcp_servers.NAME] table: a stdio server
// (command, args, env) or an http one (url and headers). Secrets stay out
// of the file: env_http_headers and bearer_token_env_var name environment
// variables that hold them.
type MCPServerSettings struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	URL     string            `toml:"url"`
	// HTTPHeaders are sent as they are; EnvHTTPHeaders map a header to
	// the variable holding its value; BearerTokenEnvVar names the variable
	// of an Authorization: Bearer token.
	HTTPHeaders       map[string]string `toml:"http_headers"`
	EnvHTTPHeaders    map[string]string `toml:"env_http_headers"`
	BearerTokenEnvVar string            `toml:"bearer_token_env_var"`
	ToolTimeout       Duration          `toml:"tool_timeout"`
	StartupTimeout    Duration          `toml:"startup_timeout"`
	// Enabled false keeps a server in the file without starting it.
	Enabled *bool `toml:"enabled"`
}

// MCPConfig is the configured MCP servers, sorted by name, with their
// secrets read from the environment. A server whose variable is not set
// is left out, and named in the returned error; the others are kept.
func (s Settings) MCPConfig(getenv func(string) string) (MCPConfig, error) {
	cfg := MCPConfig{ToolTimeout: s.MCP.ToolTimeout.Duration, StartupTimeout: s.MCP.StartupTimeout.Duration}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.MCPServers)) {
		c, enabled, err := s.MCPServer(name, getenv)
		switch {
		case err != nil:
			errs = append(errs, err)
		case enabled:
			cfg.Servers = append(cfg.Servers, c)
		}
	}
	return cfg, errors.Join(errs...)
}

// MCPServer is the [mcp_servers.NAME] table as a session starts it, and
// whether it is enabled; an error says why a server the environment does
// not complete is left out.
func (s Settings) MCPServer(name string, getenv func(string) string) (mcp.ServerConfig, bool, error) {
	m := s.MCPServers[name]
	if m.Enabled != nil && !*m.Enabled {
		return mcp.ServerConfig{}, false, nil
	}
	c := mcp.ServerConfig{Name: name, Command: m.Command, Args: m.Args, URL: m.URL,
		ToolTimeout: m.ToolTimeout.Duration, StartupTimeout: m.StartupTimeout.Duration}
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		c.Env = append(c.Env, mcp.EnvVar{Name: k, Value: m.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(m.HTTPHeaders)) {
		c.Headers = append(c.Headers, mcp.Header{Name: k, Value: m.HTTPHeaders[k]})
	}
	var missing []string
	fromEnv := func(header, variable, prefix string) {
		v := getenv(variable)
		if v == "" {
			missing = append(missing, variable)
			return
		}
		c.Headers = append(c.Headers, mcp.Header{Name: header, Value: prefix + v})
	}
	for _, k := range slices.Sorted(maps.Keys(m.EnvHTTPHeaders)) {
		fromEnv(k, m.EnvHTTPHeaders[k], "")
	}
	if m.BearerTokenEnvVar != "" {
		fromEnv("Authorization", m.BearerTokenEnvVar, "Bearer ")
	}
	if len(missing) > 0 {
		return mcp.ServerConfig{}, true, &MissingEnvError{Server: name, Variables: missing}
	}
	return c, true, nil
}

// MissingEnvError is a server left out because variables its headers
// name are not set.
type MissingEnvError struct {
	Server    string
	Variables []string
}

func (e *MissingEnvError) Error() string {
	return fmt.Sprintf("[%s] is left out: %s not set in the environment", TOMLKey("mcp_servers", e.Server), strings.Join(e.Variables, ", "))
}

// validate checks the [mcp_servers] tables: each a stdio or an http
// server, not both.
func (s Settings) validateMCP() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.MCPServers)) {
		m := s.MCPServers[name]
		c := mcp.ServerConfig{Name: name, Command: m.Command, URL: m.URL}
		if err := mcp.Check([]mcp.ServerConfig{c}); err != nil {
			errs = append(errs, fmt.Errorf("[%s]: %w", TOMLKey("mcp_servers", name), err))
			continue
		}
		if m.URL == "" && (len(m.HTTPHeaders) > 0 || len(m.EnvHTTPHeaders) > 0 || m.BearerTokenEnvVar != "") {
			errs = append(errs, fmt.Errorf("[%s]: headers go with a url, and this server has a command", TOMLKey("mcp_servers", name)))
		}
		if m.URL != "" && (len(m.Args) > 0 || len(m.Env) > 0) {
			errs = append(errs, fmt.Errorf("[%s]: args and env go with a command, and this server has a url", TOMLKey("mcp_servers", name)))
		}
	}
	return errors.Join(errs...)
}
