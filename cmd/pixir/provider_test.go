package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/anthropic"
	"github.com/pixir-go/pixir/runtime/provider/openai"
)

// settingsFrom writes config.toml into a fresh home and loads it.
func settingsFrom(t *testing.T, config string) (runtime.Settings, error) {
	t.Helper()
	home := t.TempDir()
	if config != "" {
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644))
	}
	return runtime.LoadSettings(home)
}

const profilesConfig = `
profile = "local"
model = "top-model"
context_window = 8192
max_turn_requests = 20

[profiles.local]
provider = "openai"
base_url = "http://localhost:11434/v1"
model = "qwen2.5-coder"
context_window = 32768
idle_timeout = "5m"

[profiles.hosted]
provider = "anthropic"
model = "claude-sonnet-4-5"
max_retries = 0
api_key_env = "WORK_ANTHROPIC_KEY"

[profiles.router]
provider = "openai"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
`

func TestResolveProviderPrecedence(t *testing.T) {
	settings, err := settingsFrom(t, profilesConfig)
	require.NoError(t, err)
	tests := []struct {
		name  string
		flags providerFlags
		env   map[string]string
		check func(t *testing.T, c providerChoice)
	}{
		{"the file's default profile", providerFlags{}, nil, func(t *testing.T, c providerChoice) {
			require.Equal(t, "local", c.Profile)
			require.Equal(t, openai.ProviderName, c.Name)
			require.Equal(t, "qwen2.5-coder", c.Model)
			require.Equal(t, "http://localhost:11434/v1", c.Settings.BaseURL)
			require.Equal(t, 32768, c.Settings.ContextWindow, "the profile over the top level")
			require.Equal(t, 5*time.Minute, c.policy().IdleTimeout)
			require.Equal(t, "OPENAI_API_KEY", c.KeyEnv)
			require.Empty(t, c.APIKey)
		}},
		{"PIXIR_PROFILE over the file", providerFlags{}, map[string]string{"PIXIR_PROFILE": "hosted", "WORK_ANTHROPIC_KEY": "sk-ant-work"}, func(t *testing.T, c providerChoice) {
			require.Equal(t, "hosted", c.Profile)
			require.Equal(t, anthropic.ProviderName, c.Name)
			require.Equal(t, anthropic.DefaultBaseURL, c.Settings.BaseURL)
			require.Equal(t, "sk-ant-work", c.APIKey, "api_key_env names the variable")
			require.Equal(t, 0, c.policy().MaxRetries)
			require.Equal(t, 8192, c.Settings.ContextWindow, "the top level fills what the profile leaves")
		}},
		{"--profile over PIXIR_PROFILE", providerFlags{profile: "router"}, map[string]string{"PIXIR_PROFILE": "hosted", "OPENROUTER_API_KEY": "sk-or"}, func(t *testing.T, c providerChoice) {
			require.Equal(t, "router", c.Profile)
			require.Equal(t, "https://openrouter.ai/api/v1", c.Settings.BaseURL)
			require.Equal(t, "sk-or", c.APIKey)
			require.Equal(t, "top-model", c.Model, "the profile sets no model: the top level's")
		}},
		{"environment over the profile", providerFlags{}, map[string]string{"PIXIR_MODEL": "llama3.2", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_API_KEY": "sk-x"}, func(t *testing.T, c providerChoice) {
			require.Equal(t, "llama3.2", c.Model)
			require.Equal(t, "http://127.0.0.1:8080/v1", c.Settings.BaseURL)
			require.Equal(t, "sk-x", c.APIKey)
		}},
		{"flags over the environment", providerFlags{model: "flag-model", baseURL: "http://127.0.0.1:1234/v1"}, map[string]string{"PIXIR_MODEL": "env-model", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, func(t *testing.T, c providerChoice) {
			require.Equal(t, "flag-model", c.Model)
			require.Equal(t, "http://127.0.0.1:1234/v1", c.Settings.BaseURL)
		}},
		{"--provider over the profile", providerFlags{provider: "scripted"}, nil, func(t *testing.T, c providerChoice) {
			require.Equal(t, "scripted", c.Name)
			require.Equal(t, "scripted", c.Model, "the profile's model belongs to its provider, openai")
			require.Empty(t, c.Settings.BaseURL)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := resolveProvider(tt.flags, settings, func(k string) string { return tt.env[k] })
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestResolveProviderDefaults(t *testing.T) {
	none := func(string) string { return "" }
	c, err := resolveProvider(providerFlags{}, runtime.Settings{}, none)
	require.NoError(t, err)
	require.Equal(t, providerChoice{Name: "scripted", Model: "scripted"}, c)

	c, err = resolveProvider(providerFlags{provider: "openai"}, runtime.Settings{}, none)
	require.NoError(t, err)
	require.Equal(t, openai.DefaultBaseURL, c.Settings.BaseURL)
	require.Empty(t, c.Model, "no default model for OpenAI-compatible servers")

	c, err = resolveProvider(providerFlags{provider: "anthropic"}, runtime.Settings{}, func(k string) string {
		return map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000", "ANTHROPIC_API_KEY": " sk-ant \n"}[k]
	})
	require.NoError(t, err)
	require.Equal(t, defaultAnthropicModel, c.Model)
	require.Equal(t, "http://127.0.0.1:4000", c.Settings.BaseURL)
	require.Equal(t, "sk-ant", c.APIKey, "stray white space in a key is trimmed")
}

func TestResolveProviderErrors(t *testing.T) {
	settings, err := settingsFrom(t, profilesConfig)
	require.NoError(t, err)
	none := func(string) string { return "" }
	_, err = resolveProvider(providerFlags{profile: "remote"}, settings, none)
	require.ErrorContains(t, err, `unknown profile "remote": `)
	require.ErrorContains(t, err, "config.toml defines hosted, local, router")

	_, err = resolveProvider(providerFlags{provider: "gpt"}, settings, none)
	require.ErrorContains(t, err, `unknown provider "gpt": available providers are: scripted, openai, anthropic`)

	_, err = resolveProvider(providerFlags{provider: "openai", baseURL: "localhost:11434/v1"}, runtime.Settings{}, none)
	require.ErrorContains(t, err, `the base URL "localhost:11434/v1" of the openai provider is not an http(s) URL`)

	_, err = resolveProvider(providerFlags{}, runtime.Settings{}, func(k string) string { return map[string]string{"PIXIR_PROFILE": "x"}[k] })
	require.ErrorContains(t, err, `unknown profile "x": config.toml defines no [profiles.NAME] tables`)
}

func TestConfigErrorsNameTheLine(t *testing.T) {
	tests := []struct{ name, config, want string }{
		{"typo in a profile", "[profiles.local]\nprovider = \"openai\"\nmodle = \"x\"\n", `config.toml:3:1: unknown key "profiles.local.modle"`},
		{"typo at the top level", "provider = \"scripted\"\nmodle = \"x\"\n", `config.toml:2:1: unknown key "modle"`},
		{"a duration without a unit", "[profiles.a]\nidle_timeout = \"90\"\n", `config.toml:2:16: profiles.a.idle_timeout: want a duration with a unit, such as "90s" or "2m", got 90`},
		{"a size without a number", "max_answer_size = \"MiB\"\n", `config.toml:1:19: max_answer_size: want a size with a unit, such as "8MiB", "512KiB" or "100000B", got MiB`},
		{"a size without a unit", "[profiles.a]\nmax_answer_size = \"65536\"\n", `config.toml:2:19: profiles.a.max_answer_size: want a size with a unit`},
		{"a size of zero", "max_answer_size = \"0MiB\"\n", "a size must be positive, got 0MiB"},
		{"an unknown reasoning effort", "[profiles.a]\nmodel_reasoning_effort = \"max\"\n",
			`config.toml:2:1: profiles.a.model_reasoning_effort "max" is not one of none, minimal, low, medium, high, xhigh`},
		{"a negative context window", "[profiles.a]\ncontext_window = -1\n", "config.toml:2:1: profiles.a.context_window must be positive, got -1"},
		{"the default profile is missing", "profile = \"nope\"\n[profiles.a]\n", `config.toml:1:1: unknown profile "nope": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := settingsFrom(t, tt.config)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestResolveProviderLayers checks each setting through every layer: a
// flag beats the environment, which beats the chosen profile, which beats
// the top level of config.toml, which beats the built-in default.
func TestResolveProviderLayers(t *testing.T) {
	const topLevel = `
provider = "openai"
model = "cfg-model"
base_url = "http://127.0.0.1:1001/v1"
api_key_env = "CFG_KEY"
context_window = 4096

[profiles.p]
model = "prof-model"
base_url = "http://127.0.0.1:1002/v1"
context_window = 16384

[profiles.claude]
provider = "anthropic"
api_key_env = "CLAUDE_KEY"
`
	withConfig, err := settingsFrom(t, topLevel)
	require.NoError(t, err)
	type want struct {
		name, profile, model, baseURL, keyEnv, key string
		window                                     int
	}
	env := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name     string
		settings runtime.Settings
		flags    providerFlags
		env      map[string]string
		want     want
	}{
		{"built-in defaults", runtime.Settings{}, providerFlags{}, nil,
			want{name: "scripted", model: "scripted"}},
		{"the default key variable of openai", runtime.Settings{}, providerFlags{provider: "openai", model: "m"}, env("OPENAI_API_KEY", "sk-default"),
			want{name: "openai", model: "m", baseURL: openai.DefaultBaseURL, keyEnv: "OPENAI_API_KEY", key: "sk-default"}},
		{"the top level of config.toml over the defaults", withConfig, providerFlags{}, env("CFG_KEY", "sk-cfg", "OPENAI_API_KEY", "sk-ignored"),
			want{name: "openai", model: "cfg-model", baseURL: "http://127.0.0.1:1001/v1", keyEnv: "CFG_KEY", key: "sk-cfg", window: 4096}},
		{"a profile over the top level; what it leaves comes from the top level", withConfig, providerFlags{profile: "p"}, env("CFG_KEY", "sk-cfg"),
			want{name: "openai", profile: "p", model: "prof-model", baseURL: "http://127.0.0.1:1002/v1", keyEnv: "CFG_KEY", key: "sk-cfg", window: 16384}},
		{"the environment over the profile", withConfig, providerFlags{profile: "p"},
			env("PIXIR_MODEL", "env-model", "OPENAI_BASE_URL", "http://127.0.0.1:1003/v1", "PIXIR_PROVIDER", "openai"),
			want{name: "openai", profile: "p", model: "env-model", baseURL: "http://127.0.0.1:1003/v1", keyEnv: "CFG_KEY", window: 16384}},
		{"flags over the environment", withConfig, providerFlags{profile: "p", provider: "openai", model: "flag-model", baseURL: "http://127.0.0.1:1004/v1"},
			env("PIXIR_MODEL", "env-model", "OPENAI_BASE_URL", "http://127.0.0.1:1003/v1", "PIXIR_PROVIDER", "anthropic", "PIXIR_PROFILE", "claude"),
			want{name: "openai", profile: "p", model: "flag-model", baseURL: "http://127.0.0.1:1004/v1", keyEnv: "CFG_KEY", window: 16384}},
		{"PIXIR_PROVIDER over the file's provider leaves out the file's model, base_url, api_key_env and context_window", withConfig, providerFlags{},
			env("PIXIR_PROVIDER", "anthropic", "ANTHROPIC_API_KEY", "sk-ant", "CFG_KEY", "sk-cfg"),
			want{name: "anthropic", model: defaultAnthropicModel, baseURL: anthropic.DefaultBaseURL, keyEnv: "ANTHROPIC_API_KEY", key: "sk-ant"}},
		{"but PIXIR_MODEL still applies to it", withConfig, providerFlags{}, env("PIXIR_PROVIDER", "anthropic", "PIXIR_MODEL", "claude-opus-4-1"),
			want{name: "anthropic", model: "claude-opus-4-1", baseURL: anthropic.DefaultBaseURL, keyEnv: "ANTHROPIC_API_KEY"}},
		{"an anthropic profile reads ANTHROPIC_BASE_URL, not OPENAI_BASE_URL, and inherits nothing of the top level's openai", withConfig, providerFlags{profile: "claude"},
			env("OPENAI_BASE_URL", "http://127.0.0.1:1005/v1", "ANTHROPIC_BASE_URL", "http://127.0.0.1:1006", "CLAUDE_KEY", " sk-claude "),
			want{name: "anthropic", profile: "claude", model: defaultAnthropicModel, baseURL: "http://127.0.0.1:1006", keyEnv: "CLAUDE_KEY", key: "sk-claude"}},
		{"the anthropic default model", runtime.Settings{}, providerFlags{provider: "anthropic"}, nil,
			want{name: "anthropic", model: defaultAnthropicModel, baseURL: anthropic.DefaultBaseURL, keyEnv: "ANTHROPIC_API_KEY"}},
		{"PIXIR_PROFILE picks a profile", withConfig, providerFlags{}, env("PIXIR_PROFILE", "claude"),
			want{name: "anthropic", profile: "claude", model: defaultAnthropicModel, baseURL: anthropic.DefaultBaseURL, keyEnv: "CLAUDE_KEY"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := resolveProvider(tt.flags, tt.settings, func(k string) string { return tt.env[k] })
			require.NoError(t, err)
			got := want{name: c.Name, profile: c.Profile, model: c.Model, baseURL: c.Settings.BaseURL, keyEnv: c.KeyEnv, key: c.APIKey, window: c.Settings.ContextWindow}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestResolveProviderRejectsBadBaseURLs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		config string
		flags  providerFlags
		env    map[string]string
		want   string
	}{
		{"flag without a scheme", "", providerFlags{provider: "openai", baseURL: "localhost:11434/v1"}, nil,
			`the base URL "localhost:11434/v1" of the openai provider is not an http(s) URL; write it whole, e.g. http://localhost:11434/v1`},
		{"environment with another scheme", "", providerFlags{provider: "anthropic"}, map[string]string{"ANTHROPIC_BASE_URL": "ftp://127.0.0.1/"},
			`the base URL "ftp://127.0.0.1/" of the anthropic provider is not an http(s) URL`},
		{"config without a host", "provider = \"openai\"\nbase_url = \"http:///v1\"\n", providerFlags{}, nil,
			`the base URL "http:///v1" of the openai provider is not an http(s) URL`},
		{"config that does not parse", "provider = \"openai\"\nbase_url = \"http://[::1\"\n", providerFlags{}, nil,
			`the base URL "http://[::1" of the openai provider is not an http(s) URL`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			settings, err := settingsFrom(t, tt.config)
			require.NoError(t, err)
			_, err = resolveProvider(tt.flags, settings, func(k string) string { return tt.env[k] })
			require.ErrorContains(t, err, tt.want)
		})
	}
	// The scripted provider has no base URL, so a bad one is not its problem.
	settings, err := settingsFrom(t, "base_url = \"nonsense\"\n")
	require.NoError(t, err)
	c, err := resolveProvider(providerFlags{}, settings, func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, "scripted", c.Name)
}

func TestBuildProviderAppliesTheSettings(t *testing.T) {
	settings, err := settingsFrom(t, "provider = \"openai\"\nmodel = \"m\"\ncontext_window = 8192\nidle_timeout = \"90s\"\nconnect_timeout = \"3s\"\nmax_retries = 1\nmax_answer_size = \"2MiB\"\n")
	require.NoError(t, err)
	c, err := resolveProvider(providerFlags{baseURL: "http://127.0.0.1:1/v1"}, settings, func(string) string { return "" })
	require.NoError(t, err)
	pol := c.policy()
	require.Equal(t, int64(2<<20), pol.MaxAnswerBytes)
	require.Equal(t, 90*time.Second, pol.IdleTimeout)
	require.Equal(t, 3*time.Second, pol.ConnectTimeout)
	require.Equal(t, 1, pol.MaxRetries)
	p, err := buildProvider(c, nil)
	require.NoError(t, err)
	op, ok := p.(*openai.Provider)
	require.True(t, ok, "%T", p)
	require.Equal(t, "http://127.0.0.1:1/v1", op.BaseURL())

	c, err = resolveProvider(providerFlags{provider: "anthropic", baseURL: "http://127.0.0.1:2/v1"}, runtime.Settings{}, func(string) string { return "" })
	require.NoError(t, err)
	p, err = buildProvider(c, nil)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:2", p.(*anthropic.Provider).BaseURL(), "a /v1 suffix is accepted")

	_, err = buildProvider(providerChoice{Name: "scripted", Settings: runtime.ProviderSettings{Scripted: runtime.ScriptedSettings{Script: filepath.Join(t.TempDir(), "missing.toml")}}}, nil)
	require.ErrorContains(t, err, "missing.toml")
}

func TestMaxAnswerSizeTakesUnitsAndBytes(t *testing.T) {
	for config, want := range map[string]int64{
		`max_answer_size = "8MiB"`:   8 << 20,
		`max_answer_size = "512KiB"`: 512 << 10,
		`max_answer_size = "2MB"`:    2_000_000,
		`max_answer_size = " 100 B"`: 100,
	} {
		settings, err := settingsFrom(t, config+"\n")
		require.NoError(t, err, config)
		require.Equal(t, want, settings.MaxAnswerSize.Bytes, config)
	}
	c, err := resolveProvider(providerFlags{}, runtime.Settings{}, func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, int64(8<<20), c.policy().MaxAnswerBytes, "the default")
}
