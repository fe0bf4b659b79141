package acp

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/acp/rpc"
)

// The answers that encode themselves are rpc.JSONAppenders.
var (
	_ rpc.JSONAppender = InitializeResponse{}
	_ rpc.JSONAppender = NewSessionResponse{}
)

// odd is a string with everything encoding/json escapes its own way: HTML
// characters, U+2028 and U+2029, control characters, a quote, a
// backslash, invalid UTF-8, and plain non-ASCII.
const odd = "a<b>&c \u2028\u2029 \x00\x1f\t\n\"\\ \xff\xfe é→"

func TestAnswersEncodeAsEncodingJSON(t *testing.T) {
	cases := map[string]interface{ AppendJSON([]byte) []byte }{
		"initialize, zero":             InitializeResponse{},
		"initialize, as Pixir answers": (&Server{version: "0.1.0-dev"}).mustInitialize(t, false),
		"initialize, unstable caps":    (&Server{version: odd}).mustInitialize(t, true),
		"initialize, every field": InitializeResponse{
			ProtocolVersion: -7,
			AgentCapabilities: AgentCapabilities{
				LoadSession:         true,
				PromptCapabilities:  PromptCapabilities{Image: true, Audio: true, EmbeddedContext: true},
				MCPCapabilities:     MCPCapabilities{HTTP: true, SSE: true},
				SessionCapabilities: SessionCapabilities{Resume: &Marker{}, Fork: &Marker{}},
			},
			AuthMethods: []AuthMethod{{ID: "a", Name: odd}, {ID: odd, Name: "", Description: odd}},
			AgentInfo:   Implementation{Name: odd, Title: odd, Version: ""},
		},
		"session/new, zero":         NewSessionResponse{},
		"session/new, id only":      NewSessionResponse{SessionID: odd},
		"session/new, nil lists":    NewSessionResponse{Modes: &ModeState{}, ConfigOptions: []ConfigOption{{}}},
		"session/new, empty lists":  NewSessionResponse{Modes: &ModeState{AvailableModes: []SessionMode{}}, ConfigOptions: []ConfigOption{}},
		"session/new, empty option": NewSessionResponse{ConfigOptions: []ConfigOption{{Options: []SelectOption{}}}},
		"session/new, every field": NewSessionResponse{
			SessionID: "0b6a2b1e-8a4c-4c53-9a1e-2f1a3c4d5e6f",
			Modes: &ModeState{CurrentModeID: "auto", AvailableModes: []SessionMode{
				{ID: "auto", Name: "Auto"}, {ID: odd, Name: odd, Description: odd},
			}},
			ConfigOptions: []ConfigOption{
				{ID: "mode", Name: "Mode", Category: "mode", Type: "select", CurrentValue: "auto",
					Options: []SelectOption{{Value: "auto", Name: "Auto", Description: odd}, {Value: odd, Name: odd}}},
				{ID: odd, Name: odd, Description: odd, Category: odd, Type: odd, CurrentValue: odd},
			},
		},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(v)
			require.NoError(t, err)
			require.Equal(t, string(want), string(v.AppendJSON(nil)))
			// Appended after what b holds, which it leaves alone.
			require.Equal(t, "x"+string(want), string(v.AppendJSON([]byte("x"))))
		})
	}
}

// mustInitialize is the answer to initialize as the server gives it.
func (s *Server) mustInitialize(t *testing.T, unstable bool) InitializeResponse {
	t.Helper()
	version := 1
	req := &InitializeRequest{ProtocolVersion: &version}
	if unstable {
		req.ClientCapabilities.Plan = json.RawMessage(`{}`)
	}
	got, err := s.initialize(req)
	require.NoError(t, err)
	return got.(InitializeResponse)
}

func FuzzAnswersEncodeAsEncodingJSON(f *testing.F) {
	f.Add("auto", "Auto", "", "0.1.0-dev", true, false)
	f.Add(odd, odd, odd, odd, false, true)
	f.Add("", "\u2028", "<script>", "\xed\xa0\x80", true, true)
	f.Fuzz(func(t *testing.T, a, b, c, d string, flag1, flag2 bool) {
		var marker *Marker
		if flag2 {
			marker = &Marker{}
		}
		var modes []SessionMode
		var options []SelectOption
		if flag1 {
			modes = []SessionMode{{ID: a, Name: b, Description: c}, {ID: d}}
			options = []SelectOption{{Value: a, Name: b, Description: c}}
		}
		for _, v := range []interface{ AppendJSON([]byte) []byte }{
			InitializeResponse{
				ProtocolVersion: len(a),
				AgentCapabilities: AgentCapabilities{
					LoadSession:         flag1,
					PromptCapabilities:  PromptCapabilities{Image: flag2, EmbeddedContext: flag1},
					MCPCapabilities:     MCPCapabilities{SSE: flag1},
					SessionCapabilities: SessionCapabilities{List: marker, Delete: marker},
				},
				AuthMethods: []AuthMethod{{ID: a, Name: b, Description: c}},
				AgentInfo:   Implementation{Name: d, Title: c, Version: a},
			},
			NewSessionResponse{SessionID: a, Modes: &ModeState{CurrentModeID: b, AvailableModes: modes},
				ConfigOptions: []ConfigOption{{ID: a, Name: b, Description: c, Category: d, Type: a, CurrentValue: b, Options: options}}},
		} {
			want, err := json.Marshal(v)
			require.NoError(t, err)
			require.Equal(t, string(want), string(v.AppendJSON(nil)))
		}
	})
}

// TestAnswersEncodeEveryFieldTheirTypesHave fills every field of the two
// answers with random values (testing/quick walks the types by
// reflection), so a field added to either type and not to its AppendJSON
// fails here instead of silently never reaching the wire; a field quick
// cannot fill (an interface, say) fails here too, to be covered by hand.
func TestAnswersEncodeEveryFieldTheirTypesHave(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	for _, typ := range []reflect.Type{reflect.TypeFor[InitializeResponse](), reflect.TypeFor[NewSessionResponse]()} {
		for range 200 {
			v, ok := quick.Value(typ, rnd)
			require.True(t, ok, "testing/quick cannot fill %s: cover its new field in TestAnswersEncodeAsEncodingJSON", typ)
			answer := v.Interface().(interface{ AppendJSON([]byte) []byte })
			want, err := json.Marshal(answer)
			require.NoError(t, err)
			require.Equal(t, string(want), string(answer.AppendJSON(nil)), "%s", typ)
		}
	}
}
