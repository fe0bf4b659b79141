package acp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodePrompt gives what decodeParams gives — the same text for the
// model, the same content for the Log, the same errors — while it leaves
// large texts out of encoding/json's hands where it can.
func TestDecodePromptAgreesWithDecodeParams(t *testing.T) {
	large := func(seed string) string {
		return strings.Repeat(seed, largeText/len(seed)+1)
	}
	q := func(s string) string {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		return string(b)
	}
	pasted := large("line \"quoted\"\twith <tags> & élodie → 😀\n")
	tests := []struct {
		name   string
		params string
		fast   bool // a large text is left out of encoding/json
	}{
		{"a large text block", `{"sessionId":"s","prompt":[{"type":"text","text":` + q(pasted) + `}]}`, true},
		{"a small text and a large resource", `{"sessionId":"s","prompt":[{"type":"text","text":"read this"},{"type":"resource","resource":{"uri":"file:///a.log","text":` + q(pasted) + `}}]}`, true},
		{"a large blob", `{"sessionId":"s","prompt":[{"type":"resource","resource":{"uri":"file:///a.png","mimeType":"image/png","blob":` + q(large("iVBORw0KGgo=")) + `}}]}`, true},
		{"members in any order", `{"prompt":[{"resource":{"text":` + q(pasted) + `,"uri":"file:///b"},"type":"resource"},{"text":` + q(large("x")) + `,"type":"text"}],"sessionId":"s"}`, true},
		{"escapes the encoder would not write", `{"sessionId":"s","prompt":[{"type":"text","text":"` + large(`\u0041\ud83d\ude00 \ud800 \/ \b`) + `"}]}`, true},
		{"surrogate halves at the ends of two texts", `{"sessionId":"s","prompt":[{"type":"text","text":"` + large("x") + `\ud83d"},{"type":"resource","resource":{"uri":"file:///\"q\"","text":"\ude00` + large("y") + `"}}]}`, true},
		{"a key spelled otherwise", `{"sessionId":"s","prompt":[{"type":"text","Text":` + q(pasted) + `}]}`, false},
		{"a key twice", `{"sessionId":"s","prompt":[{"type":"text","text":"small","text":` + q(pasted) + `}]}`, false},
		{"the prompt spelled otherwise", `{"sessionId":"s","Prompt":[{"type":"text","text":` + q(pasted) + `}]}`, false},
		{"invalid UTF-8", "{\"sessionId\":\"s\",\"prompt\":[{\"type\":\"text\",\"text\":\"" + large("bad \xff byte ") + "\"}]}", false},
		{"a large uri", `{"sessionId":"s","prompt":[{"type":"resource_link","name":"x","uri":` + q(large("data:")) + `}]}`, false},
		{"small texts", `{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}`, false},
		{"no session", `{"prompt":[{"type":"text","text":` + q(pasted) + `}]}`, true},
		{"an image", `{"sessionId":"s","prompt":[{"type":"image","data":` + q(pasted) + `,"text":` + q(pasted) + `}]}`, true},
		{"a resource without text or blob", `{"sessionId":"s","prompt":[{"type":"resource","resource":{"uri":"file:///c"}},{"type":"text","text":` + q(pasted) + `}]}`, true},
		{"a text of the wrong type", `{"sessionId":"s","prompt":[{"type":"text","text":5},{"type":"text","text":` + q(pasted) + `}]}`, true},
		{"a prompt of the wrong type", `{"sessionId":"s","prompt":"hi"}`, false},
		{"not an object", `[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotErr := decodePrompt(json.RawMessage(tt.params))
			want, wantErr := decodeParams[PromptRequest](json.RawMessage(tt.params))
			if wantErr != nil {
				require.EqualError(t, gotErr, wantErr.Error())
				return
			}
			require.NoError(t, gotErr)
			require.Equal(t, promptText(want.Prompt), promptText(got.Prompt))
			// The text as JSON pieces for the Log, when a large text was
			// kept as it came: joined, they decode to the model's text.
			text, quoted := modelText(got.Prompt)
			rawText := false
			for _, b := range got.Prompt {
				rawText = rawText || b.rawText != nil || b.Resource != nil && b.Resource.rawText != nil
			}
			require.Equal(t, rawText, quoted != nil, "pieces when a large text was kept as it came")
			if quoted != nil {
				var fromPieces string
				require.NoError(t, json.Unmarshal(bytes.Join(quoted, nil), &fromPieces))
				require.Equal(t, text, fromPieces)
			}
			// The content as the replay reads it (the Log keeps it as sent).
			var gotContent, wantContent []ContentBlock
			require.NoError(t, json.Unmarshal(promptContent(got), &gotContent))
			require.NoError(t, json.Unmarshal(promptContent(want), &wantContent))
			require.Equal(t, wantContent, gotContent)
			left := false
			for _, b := range got.Prompt {
				left = left || b.rawText != nil || b.Resource != nil && (b.Resource.rawText != nil || b.Resource.rawBlob != nil)
			}
			require.Equal(t, tt.fast, left, "a large text left out of encoding/json")
		})
	}
}

// A text block carries its text even when it is empty: TextContent requires
// it (a prompt of an empty text, replayed; an MCP tool's empty text).
func TestEmptyTextBlockKeepsItsText(t *testing.T) {
	for _, tt := range []struct {
		block ContentBlock
		want  string
	}{
		{textBlock(""), `{"type":"text","text":""}`},
		{textBlock("hi"), `{"type":"text","text":"hi"}`},
		{ContentBlock{Type: "resource_link", URI: "file:///a", Name: "a"}, `{"type":"resource_link","uri":"file:///a","name":"a"}`},
	} {
		b, err := json.Marshal(ContentChunk{SessionUpdate: "user_message_chunk", Content: tt.block})
		require.NoError(t, err)
		require.JSONEq(t, `{"sessionUpdate":"user_message_chunk","content":`+tt.want+`}`, string(b))
		require.Contains(t, string(b), tt.want) // no member beside those
	}
	require.JSONEq(t, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}`,
		string(chunkUpdate("agent_message_chunk", []byte(`""`))))
}
