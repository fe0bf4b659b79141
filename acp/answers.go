package acp

import (
	"strconv"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// The answers to initialize and session/new are what an editor waits for
// before it can prompt, and each is encoded once per process: encoding/json
// would walk each of their types by reflection first (its type caches are
// empty at start), which costs a start more than the encoding. So they
// write themselves, byte for byte as json.Marshal writes them (field
// order, omitempty, null for a nil slice, HTML escaping):
// TestAnswersEncodeAsEncodingJSON and FuzzAnswersEncodeAsEncodingJSON hold
// the two equal. Types used inside other messages are still encoded by
// encoding/json there.

// AppendJSON appends r as json.Marshal encodes it (rpc.JSONAppender).
func (r InitializeResponse) AppendJSON(b []byte) []byte {
	b = append(b, `{"protocolVersion":`...)
	b = strconv.AppendInt(b, int64(r.ProtocolVersion), 10)
	c := r.AgentCapabilities
	b = append(b, `,"agentCapabilities":{"loadSession":`...)
	b = strconv.AppendBool(b, c.LoadSession)
	b = append(b, `,"promptCapabilities":{"image":`...)
	b = strconv.AppendBool(b, c.PromptCapabilities.Image)
	b = append(b, `,"audio":`...)
	b = strconv.AppendBool(b, c.PromptCapabilities.Audio)
	b = append(b, `,"embeddedContext":`...)
	b = strconv.AppendBool(b, c.PromptCapabilities.EmbeddedContext)
	b = append(b, `},"mcpCapabilities":{"http":`...)
	b = strconv.AppendBool(b, c.MCPCapabilities.HTTP)
	b = append(b, `,"sse":`...)
	b = strconv.AppendBool(b, c.MCPCapabilities.SSE)
	b = append(b, `},"sessionCapabilities":{`...)
	b = c.SessionCapabilities.appendMembers(b)
	b = append(b, `}},"authMethods":`...)
	b = appendNamedList(b, r.AuthMethods, `{"id":`, func(m AuthMethod) (string, string, string) { return m.ID, m.Name, m.Description })
	b = append(b, `,"agentInfo":{"name":`...)
	b = jsonraw.AppendStringHTML(b, r.AgentInfo.Name)
	b = appendOptional(b, `,"title":`, r.AgentInfo.Title)
	b = append(b, `,"version":`...)
	b = jsonraw.AppendStringHTML(b, r.AgentInfo.Version)
	return append(b, "}}"...)
}

// appendMembers appends the capabilities present, as "name":{} members.
func (c SessionCapabilities) appendMembers(b []byte) []byte {
	first := true
	for _, m := range [...]struct {
		name   string
		marker *Marker
	}{{"list", c.List}, {"resume", c.Resume}, {"close", c.Close}, {"delete", c.Delete}, {"fork", c.Fork}} {
		if m.marker == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, m.name...)
		b = append(b, `":{}`...)
	}
	return b
}

// AppendJSON appends r as json.Marshal encodes it (rpc.JSONAppender).
func (r NewSessionResponse) AppendJSON(b []byte) []byte {
	b = append(b, `{"sessionId":`...)
	b = jsonraw.AppendStringHTML(b, r.SessionID)
	if r.Modes != nil {
		b = append(b, `,"modes":{"currentModeId":`...)
		b = jsonraw.AppendStringHTML(b, r.Modes.CurrentModeID)
		b = append(b, `,"availableModes":`...)
		b = appendNamedList(b, r.Modes.AvailableModes, `{"id":`, func(m SessionMode) (string, string, string) { return m.ID, m.Name, m.Description })
		b = append(b, '}')
	}
	if len(r.ConfigOptions) > 0 {
		b = append(b, `,"configOptions":[`...)
		for i, o := range r.ConfigOptions {
			if i > 0 {
				b = append(b, ',')
			}
			b = o.appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (o ConfigOption) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = jsonraw.AppendStringHTML(b, o.ID)
	b = append(b, `,"name":`...)
	b = jsonraw.AppendStringHTML(b, o.Name)
	b = appendOptional(b, `,"description":`, o.Description)
	b = appendOptional(b, `,"category":`, o.Category)
	b = append(b, `,"type":`...)
	b = jsonraw.AppendStringHTML(b, o.Type)
	b = append(b, `,"currentValue":`...)
	b = jsonraw.AppendStringHTML(b, o.CurrentValue)
	b = append(b, `,"options":`...)
	b = appendNamedList(b, o.Options, `{"value":`, func(s SelectOption) (string, string, string) { return s.Value, s.Name, s.Description })
	return append(b, '}')
}

// appendNamedList appends items as json.Marshal encodes a slice of
// {<key>, name, description (omitempty)} objects — null when nil — with
// open the object's opening and its first key ({"id": or {"value":), and
// fields each item's three strings.
func appendNamedList[T any](b []byte, items []T, open string, fields func(T) (key, name, description string)) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, item := range items {
		if i > 0 {
			b = append(b, ',')
		}
		key, name, description := fields(item)
		b = append(b, open...)
		b = jsonraw.AppendStringHTML(b, key)
		b = append(b, `,"name":`...)
		b = jsonraw.AppendStringHTML(b, name)
		b = appendOptional(b, `,"description":`, description)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendOptional appends an omitempty string member: key (with its
// leading comma and colon) and s, unless s is empty.
func appendOptional(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return jsonraw.AppendStringHTML(b, s)
}
