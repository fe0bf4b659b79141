package runtime

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
)

// The fast encodings of prompts and answers decode to what json.Marshal's
// would.
func TestEventDataEncodingAgreesWithEncodingJSON(t *testing.T) {
	text := "a pasted file:\n\t\"quoted\" <b>&amp;</b> élodie → \x00 \u2028 end"
	tests := []struct {
		name string
		data any
		into func() any
	}{
		{"user message", UserMessageData{Text: text, Content: json.RawMessage(`[{"type":"text","text":"a \"pasted\" file"}]`)}, func() any { return new(UserMessageData) }},
		{"user message without content", UserMessageData{Text: text}, func() any { return new(UserMessageData) }},
		{"text with invalid UTF-8", TextDeltaData{Text: "bad \xff"}, func() any { return new(TextDeltaData) }},
		{"text delta", TextDeltaData{Text: text}, func() any { return new(TextDeltaData) }},
		{"reasoning", ReasoningData{Text: text}, func() any { return new(ReasoningData) }},
		{"assistant message", AssistantMessageData{Text: text}, func() any { return new(AssistantMessageData) }},
		{"assistant message with calls", AssistantMessageData{Text: text, Partial: true, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)}}}, func() any { return new(AssistantMessageData) }},
		{"any other", TurnFailedData{Kind: "provider_error", Message: "<boom>"}, func() any { return new(TurnFailedData) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeEventData(tt.data)
			require.NoError(t, err)
			require.True(t, json.Valid(got), "%s", got)
			require.NotContains(t, string(got), "\xff", "invalid UTF-8 is replaced")
			std, err := json.Marshal(tt.data)
			require.NoError(t, err)
			a, b := tt.into(), tt.into()
			require.NoError(t, json.Unmarshal(got, a))
			require.NoError(t, json.Unmarshal(std, b))
			require.Equal(t, b, a)
		})
	}
}

// encodeEventData writes these types field by field: a field added to one
// must be added there too, or it would be lost from the Log.
func TestTheFastEncodedEventTypesHaveTheFieldsTheEncoderWrites(t *testing.T) {
	fields := func(v any) []string {
		var names []string
		for _, f := range reflect.VisibleFields(reflect.TypeOf(v)) {
			names = append(names, f.Name)
		}
		return names
	}
	require.Equal(t, []string{"Text", "Content"}, fields(UserMessageData{}))
	require.Equal(t, []string{"Text", "ToolCalls", "Partial"}, fields(AssistantMessageData{}))
	require.Equal(t, []string{"Text"}, fields(ReasoningData{}))
	require.Equal(t, []string{"Text"}, fields(TextDeltaData{}))
}

func TestALogLineIsTheEventAsEncodingJSONWritesIt(t *testing.T) {
	ev := Event{ID: "0199-ev", SessionID: "s-1", Seq: 42, TS: time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC),
		Type: EventUserMessage, Data: json.RawMessage(`{"text":"hi <there>"}`)}
	line := appendEventLine(nil, &ev)
	require.True(t, strings.HasSuffix(string(line), "}\n"))
	require.Equal(t, 1, strings.Count(string(line), "\n"))
	std, err := json.Marshal(ev)
	require.NoError(t, err)
	require.JSONEq(t, string(std), string(line))

	var back Event
	require.NoError(t, json.Unmarshal(line, &back))
	require.Equal(t, ev.TS, back.TS)

	ev.Data = nil
	require.JSONEq(t, `null`, string(mustMember(t, appendEventLine(nil, &ev), "data")))
}

func mustMember(t *testing.T, line []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &m))
	return m[key]
}

func TestTitleFromTakesTheFirstWords(t *testing.T) {
	// What titleFrom returned before it learned to stop early.
	whole := func(text string) string {
		t := strings.Join(strings.Fields(text), " ")
		if r := []rune(t); len(r) > 80 {
			t = string(r[:79]) + "…"
		}
		return t
	}
	for _, text := range []string{
		"", "   ", "fix the\n\tbug  please", strings.Repeat("word ", 100), strings.Repeat("é", 81),
		strings.Repeat("z", 1<<20), "short " + strings.Repeat("→", 200), strings.Repeat("ab ", 26) + "cdefgh",
		strings.Repeat("x", 80), strings.Repeat("x", 79) + " y",
	} {
		require.Equal(t, whole(text), titleFrom(text), "%.40q", text)
	}
}

func TestALargeEventIsWrittenWholeAndReadsBack(t *testing.T) {
	path := t.TempDir() + "/s.ndjson"
	l, err := CreateLog(path)
	require.NoError(t, err)
	big := strings.Repeat("a pasted \"file\"\n", largeEvent/8)
	data, err := encodeEventData(UserMessageData{Text: big, Content: json.RawMessage(`[{"type":"text","text":"x"}]`)})
	require.NoError(t, err)
	for _, d := range []json.RawMessage{json.RawMessage(`{"text":"small"}`), data, json.RawMessage(`{"text":"after"}`)} {
		require.NoError(t, l.Append(&Event{SessionID: "s", Type: EventUserMessage, Data: d}))
	}
	require.NoError(t, l.Close())
	events, report, err := ReadLog(path)
	require.NoError(t, err)
	require.Equal(t, LoadReport{Events: 3}, report)
	var d UserMessageData
	require.NoError(t, json.Unmarshal(events[1].Data, &d))
	require.Equal(t, big, d.Text)
	require.Equal(t, []int64{1, 2, 3}, []int64{events[0].Seq, events[1].Seq, events[2].Seq})
}
