package acp

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// The subset of ACP v1 wire types Pixir uses, hand-written (DESIGN.md);
// the official schema in the conformance suite judges them.

// ProtocolVersion is the ACP major version Pixir speaks.
const ProtocolVersion = 1

// Method names.
const (
	MethodInitialize       = "initialize"
	MethodAuthenticate     = "authenticate"
	MethodSessionNew       = "session/new"
	MethodSessionLoad      = "session/load"
	MethodSessionList      = "session/list"
	MethodSessionResume    = "session/resume"
	MethodSessionClose     = "session/close"
	MethodSessionPrompt    = "session/prompt"
	MethodSessionCancel    = "session/cancel"
	MethodSessionSetMode   = "session/set_mode"
	MethodSessionSetConfig = "session/set_config_option"
	MethodSessionDelete    = "session/delete"
	MethodSessionFork      = "session/fork"
	MethodLogout           = "logout"

	MethodSessionUpdate     = "session/update"
	MethodRequestPermission = "session/request_permission"
)

type InitializeRequest struct {
	ProtocolVersion    *int               `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
}

func (r *InitializeRequest) validate() error {
	if r.ProtocolVersion == nil {
		return missing("protocolVersion")
	}
	return nil
}

type ClientCapabilities struct {
	FS       FileSystemCapabilities    `json:"fs"`
	Terminal bool                      `json:"terminal"`
	Session  SessionClientCapabilities `json:"session"`
	// Subagents, when present ({}), says the client shows Subagents as
	// sessions of their own (subagent_update, session_message); Plan,
	// that it keeps plans by id (plan_update, plan_removed). Both are in
	// the SDK 2.4.0's schema.unstable.json.
	Subagents json.RawMessage `json:"subagents,omitempty"`
	Plan      json.RawMessage `json:"plan,omitempty"`
}

// present reports whether an optional capability was sent as an object
// (omitted and null both mean not advertised).
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// SessionClientCapabilities are what a client can show of a session beyond
// its conversation.
type SessionClientCapabilities struct {
	// Notices, when present, says the client shows notice updates.
	Notices json.RawMessage `json:"notices,omitempty"`
	// Compaction, when present, says the client shows compaction_update
	// and compaction_summary_chunk updates.
	Compaction json.RawMessage `json:"compaction,omitempty"`
}

// advertised reports whether a capability is present: given, and not
// null (the schema: "Omitted or null means unsupported").
func advertised(c json.RawMessage) bool {
	return len(c) > 0 && string(c) != "null"
}

// Notice is information for the user that is not part of the session's
// history (sent only to clients that advertise session.notices).
type Notice struct {
	SessionUpdate string `json:"sessionUpdate"` // "notice"
	Severity      string `json:"severity"`
	Title         string `json:"title"`
	Description   string `json:"description,omitempty"`
}

type FileSystemCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []AuthMethod      `json:"authMethods"`
	AgentInfo         Implementation    `json:"agentInfo"`
}

type AgentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  PromptCapabilities  `json:"promptCapabilities"`
	MCPCapabilities     MCPCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities SessionCapabilities `json:"sessionCapabilities"`
}

type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// Marker is an empty object: ACP advertises optional session methods as {}.
type Marker struct{}

type SessionCapabilities struct {
	List   *Marker `json:"list,omitempty"`
	Resume *Marker `json:"resume,omitempty"`
	Close  *Marker `json:"close,omitempty"`
	Delete *Marker `json:"delete,omitempty"`
	// Fork is unstable in the SDK 2.4.0's schema: advertised to a client
	// that opted in to unstable features (subagents or plan).
	Fork *Marker `json:"fork,omitempty"`
}

type AuthMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type AuthenticateRequest struct {
	MethodID string `json:"methodId"`
}

func (r *AuthenticateRequest) validate() error {
	if r.MethodID == "" {
		return missing("methodId")
	}
	return nil
}

type NewSessionRequest struct {
	Cwd        string            `json:"cwd"`
	MCPServers []json.RawMessage `json:"mcpServers"`
	// AdditionalDirectories is read only to say that it is not supported
	// (sessionCapabilities.additionalDirectories is not advertised): each
	// entry as it came, so one that is not a string cannot fail a request
	// that would open without it.
	AdditionalDirectories []json.RawMessage `json:"additionalDirectories,omitempty"`
}

func (r *NewSessionRequest) validate() error { return checkCwd(r.Cwd, r.MCPServers, true) }

type NewSessionResponse struct {
	SessionID     string         `json:"sessionId"`
	Modes         *ModeState     `json:"modes,omitempty"`
	ConfigOptions []ConfigOption `json:"configOptions,omitempty"`
}

type LoadSessionRequest struct {
	SessionID  string            `json:"sessionId"`
	Cwd        string            `json:"cwd"`
	MCPServers []json.RawMessage `json:"mcpServers"`
	// AdditionalDirectories: as NewSessionRequest's.
	AdditionalDirectories []json.RawMessage `json:"additionalDirectories,omitempty"`
}

func (r *LoadSessionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	return checkCwd(r.Cwd, r.MCPServers, true)
}

// ForkSessionRequest names the session to fork and the new one's cwd;
// mcpServers is optional.
type ForkSessionRequest LoadSessionRequest

func (r *ForkSessionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	return checkCwd(r.Cwd, r.MCPServers, false)
}

// ResumeSessionRequest has the same fields as load; mcpServers is optional.
type ResumeSessionRequest LoadSessionRequest

func (r *ResumeSessionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	return checkCwd(r.Cwd, r.MCPServers, false)
}

// SessionSetupResponse answers session/load and session/resume.
type SessionSetupResponse struct {
	Modes         *ModeState     `json:"modes,omitempty"`
	ConfigOptions []ConfigOption `json:"configOptions,omitempty"`
}

type ListSessionsRequest struct {
	Cwd    string `json:"cwd,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

func (r *ListSessionsRequest) validate() error {
	if r.Cwd != "" && !isAbs(r.Cwd) {
		return invalid("cwd", "must be an absolute path, got %q", r.Cwd)
	}
	return nil
}

type ListSessionsResponse struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
}

// SessionRequest is any request that names only a session.
type SessionRequest struct {
	SessionID string `json:"sessionId"`
}

func (r *SessionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	return nil
}

type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`

	// content is the "prompt" member as it came, when it is valid UTF-8
	// (see decodePrompt).
	content json.RawMessage
}

func (r *PromptRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	if r.Prompt == nil {
		return missing("prompt")
	}
	for i, b := range r.Prompt {
		if err := b.validate(fmt.Sprintf("prompt[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

type PromptResponse struct {
	StopReason string `json:"stopReason"`
}

type SetModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

func (r *SetModeRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	if r.ModeID == "" {
		return missing("modeId")
	}
	return nil
}

type SetConfigOptionRequest struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Type      string          `json:"type,omitempty"`
	Value     json.RawMessage `json:"value"`
}

func (r *SetConfigOptionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	if r.ConfigID == "" {
		return missing("configId")
	}
	if len(r.Value) == 0 {
		return missing("value")
	}
	return nil
}

type SetConfigOptionResponse struct {
	ConfigOptions []ConfigOption `json:"configOptions"`
}

type ModeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
}

type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// ConfigOption is a select config option (the only kind Pixir offers).
type ConfigOption struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	Category     string         `json:"category,omitempty"`
	Type         string         `json:"type"`
	CurrentValue string         `json:"currentValue"`
	Options      []SelectOption `json:"options"`
}

type SelectOption struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// ContentBlock is a prompt or message content block. Pixir reads text,
// resource_link and embedded resource blocks.
type ContentBlock struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	URI      string            `json:"uri,omitempty"`
	Name     string            `json:"name,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	Resource *EmbeddedResource `json:"resource,omitempty"`
	// Data (base64) is an image's or audio's; Title, Description and
	// Size a resource_link's. Pixir sends them in tool results.
	Data        string `json:"data,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`

	// rawText is a large Text as the JSON string it came as, Text being
	// left empty (see decodePrompt).
	rawText []byte
	// textProblem, in a decoded block, says what was wrong with its
	// "text" member: "missing", "null"; empty when it was a string.
	textProblem string
}

// MarshalJSON encodes a block as encoding/json would, except that a text
// block always carries its text, an empty one too: the schema requires
// "text" in TextContent, and omitempty would leave it out (a prompt of an
// empty text, replayed by session/load; an MCP tool's empty text).
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	type plain ContentBlock
	if b.Type != "text" || b.Text != "" || b.rawText != nil {
		return json.Marshal(plain(b))
	}
	return json.Marshal(struct {
		plain
		Text string `json:"text"`
	}{plain: plain(b)})
}

// UnmarshalJSON decodes a block and notes whether its text was there: a
// text block must carry its text (the schema requires it), and one
// without it is refused, not taken as an empty prompt. A text that is not
// a string is the type error encoding/json reports.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	type plain ContentBlock
	aux := struct {
		*plain
		Text json.RawMessage `json:"text"`
	}{plain: (*plain)(b)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	switch {
	case aux.Text == nil:
		b.textProblem = "missing"
	case string(aux.Text) == "null":
		b.textProblem = "null"
	case aux.Text[0] != '"':
		return &json.UnmarshalTypeError{Value: jsonKind(aux.Text[0]), Type: reflect.TypeFor[string](), Field: "text"}
	default:
		return json.Unmarshal(aux.Text, &b.Text)
	}
	return nil
}

// jsonKind names the kind of JSON value that starts with c, as
// encoding/json's type errors do.
func jsonKind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

type EmbeddedResource struct {
	URI      string  `json:"uri"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
	MimeType string  `json:"mimeType,omitempty"`

	// rawText and rawBlob are a large Text or Blob as the JSON string it
	// came as, Text or Blob pointing to "" (see decodePrompt).
	rawText, rawBlob []byte
}

func (b ContentBlock) validate(at string) error {
	switch b.Type {
	case "text":
		switch b.textProblem {
		case "missing":
			return missing(at + ".text")
		case "null":
			return invalid(at+".text", "must be a string, got null")
		}
		return nil
	case "resource_link":
		if b.URI == "" {
			return missing(at + ".uri")
		}
		if b.Name == "" {
			return missing(at + ".name")
		}
		return nil
	case "resource":
		if b.Resource == nil {
			return missing(at + ".resource")
		}
		if b.Resource.URI == "" {
			return missing(at + ".resource.uri")
		}
		if b.Resource.Text == nil && b.Resource.Blob == nil {
			return invalid(at+".resource", "needs text or blob")
		}
		return nil
	case "image", "audio":
		return invalid(at+".type", "%q content is not supported (promptCapabilities.%s is false)", b.Type, b.Type)
	case "":
		return missing(at + ".type")
	default:
		return invalid(at+".type", "unknown content type %q", b.Type)
	}
}

func textBlock(s string) ContentBlock { return ContentBlock{Type: "text", Text: s} }

// SessionNotification is the params of session/update.
type SessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// ContentChunk is user_message_chunk, agent_message_chunk or
// agent_thought_chunk.
type ContentChunk struct {
	SessionUpdate string       `json:"sessionUpdate"`
	Content       ContentBlock `json:"content"`
	MessageID     string       `json:"messageId,omitempty"`
}

// ToolCall is the tool_call update; ToolCallUpdate the tool_call_update one.
// Fields left empty are omitted, so an update carries only what changed.
type ToolCall struct {
	SessionUpdate string            `json:"sessionUpdate,omitempty"` // empty inside a permission request
	ToolCallID    string            `json:"toolCallId"`
	Title         string            `json:"title,omitempty"`
	Kind          string            `json:"kind,omitempty"`
	Status        string            `json:"status,omitempty"`
	Content       []ToolCallContent `json:"content,omitempty"`
	Locations     []Location        `json:"locations,omitempty"`
	RawInput      json.RawMessage   `json:"rawInput,omitempty"`
	RawOutput     json.RawMessage   `json:"rawOutput,omitempty"`
	Meta          map[string]any    `json:"_meta,omitempty"`
}

// ToolCallContent is content, diff or terminal.
type ToolCallContent struct {
	Type       string        `json:"type"`
	Content    *ContentBlock `json:"content,omitempty"`
	TerminalID string        `json:"terminalId,omitempty"`
	Path       string        `json:"path,omitempty"`
	OldText    *string       `json:"oldText,omitempty"`
	NewText    *string       `json:"newText,omitempty"`
}

type Location struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

// Plan is the plan update; Entries is the whole plan.
type Plan struct {
	SessionUpdate string      `json:"sessionUpdate"`
	Entries       []PlanEntry `json:"entries"`
}

type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

type CurrentModeUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	CurrentModeID string `json:"currentModeId"`
}

type ConfigOptionUpdate struct {
	SessionUpdate string         `json:"sessionUpdate"`
	ConfigOptions []ConfigOption `json:"configOptions"`
}

type UsageUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Used          int64  `json:"used"`
	Size          int    `json:"size"`
	Cost          *Cost  `json:"cost,omitempty"`
}

// Cost is the session's cumulative cost.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

type SessionInfoUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Title         string `json:"title,omitempty"`
	UpdatedAt     string `json:"updatedAt,omitempty"`
}

type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCall           `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type RequestPermissionResponse struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// CompactionUpdate is a compaction_update: sent only to clients that
// advertise session.compaction.
type CompactionUpdate struct {
	SessionUpdate string         `json:"sessionUpdate"`
	CompactionID  string         `json:"compactionId"`
	Status        string         `json:"status"`
	Summary       []ContentBlock `json:"summary,omitempty"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// CompactionSummaryChunk is one fragment of a compaction's summary.
type CompactionSummaryChunk struct {
	SessionUpdate string       `json:"sessionUpdate"`
	CompactionID  string       `json:"compactionId"`
	Content       ContentBlock `json:"content"`
}

// SubagentUpdate announces a child session on its parent's session (the
// first update for an unknown sessionId), and patches it later: omitted
// fields keep their value.
type SubagentUpdate struct {
	SessionUpdate string                `json:"sessionUpdate"` // "subagent_update"
	SessionID     string                `json:"sessionId"`
	Title         string                `json:"title,omitempty"`
	Description   string                `json:"description,omitempty"`
	Capabilities  *SubagentCapabilities `json:"capabilities,omitempty"`
	State         *SubagentState        `json:"state,omitempty"`
	Cwd           string                `json:"cwd,omitempty"`
	Meta          map[string]any        `json:"_meta,omitempty"`
}

// SubagentCapabilities are what the client may do to a child.
type SubagentCapabilities struct {
	Cancel *Marker `json:"cancel,omitempty"`
}

// SubagentState is a child's state snapshot: running, idle (with a stop
// reason, usage and, for "error", the failure), requires_action or
// unknown.
type SubagentState struct {
	State      string         `json:"state"`
	StopReason string         `json:"stopReason,omitempty"`
	Usage      *Usage         `json:"usage,omitempty"`
	Error      *ErrorObject   `json:"error,omitempty"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// Usage is token usage of completed work.
type Usage struct {
	TotalTokens  int64 `json:"totalTokens"`
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// ErrorObject is a JSON-RPC error object inside an update.
type ErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// SessionMessage is a message between sessions (send_input), as an upsert
// in the enclosing session's transcript.
type SessionMessage struct {
	SessionUpdate      string         `json:"sessionUpdate"` // "session_message"
	MessageID          string         `json:"messageId"`
	SenderSessionID    string         `json:"senderSessionId,omitempty"`
	RecipientSessionID string         `json:"recipientSessionId,omitempty"`
	Content            []ContentBlock `json:"content,omitempty"`
}

// PlanUpdate is a whole plan identified by its id (an upsert);
// PlanRemoved drops one.
type PlanUpdate struct {
	SessionUpdate string          `json:"sessionUpdate"` // "plan_update"
	Plan          PlanItemsUpdate `json:"plan"`
}

type PlanItemsUpdate struct {
	Type    string      `json:"type"` // "items"
	PlanID  string      `json:"planId"`
	Entries []PlanEntry `json:"entries"`
}

type PlanRemoved struct {
	SessionUpdate string `json:"sessionUpdate"` // "plan_removed"
	PlanID        string `json:"planId"`
}
