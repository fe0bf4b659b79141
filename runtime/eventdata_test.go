package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
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
			got, _, err := encodeEventData(tt.data)
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
			if f.IsExported() { // what encoding/json would write
				names = append(names, f.Name)
			}
		}
		return names
	}
	require.Equal(t, []string{"Text", "Content"}, fields(UserMessageData{}))
	require.Equal(t, []string{"Text", "ToolCalls", "Partial", "StopReason"}, fields(AssistantMessageData{}))
	require.Equal(t, []string{"Text"}, fields(ReasoningData{}))
	require.Equal(t, []string{"Text"}, fields(TextDeltaData{}))
	// ProviderUsageData.appendJSON too, the fields of the provider's Usage
	// it embeds included (found in review: one added there would be lost).
	require.Equal(t, []string{"Provider", "Model", "Usage", "InputTokens", "OutputTokens", "ContextWindow", "Cost", "Currency", "Purpose", "RequestBytes", "Estimated"},
		fields(ProviderUsageData{}))
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
		strings.Repeat("\xff", 100), strings.Repeat("a\xe2\x82 ", 40), strings.Repeat("\uFFFD", 90), strings.Repeat("\xed\xa0\x80é", 30),
	} {
		require.Equal(t, whole(text), titleFrom(text), "%.40q", text)
	}
}

func FuzzTitleFromTakesTheFirstWords(f *testing.F) {
	for _, seed := range []string{"", "fix the\n\tbug", strings.Repeat("é ", 60), strings.Repeat("\xff", 90), strings.Repeat("a\xe2\x82 ", 40)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		want := strings.Join(strings.Fields(text), " ")
		if r := []rune(want); len(r) > 80 {
			want = string(r[:79]) + "…"
		}
		if got := titleFrom(text); got != want {
			t.Fatalf("titleFrom(%q) = %q, want %q", text, got, want)
		}
	})
}

func TestALargeEventIsWrittenWholeAndReadsBack(t *testing.T) {
	path := t.TempDir() + "/s.ndjson"
	l, err := CreateLog(path)
	require.NoError(t, err)
	big := strings.Repeat("a pasted \"file\"\n", largeEvent/8)
	data, _, err := encodeEventData(UserMessageData{Text: big, Content: json.RawMessage(`[{"type":"text","text":"x"}]`)})
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

// A prompt of megabytes whose text comes as JSON pieces (a client's large
// texts as the slices of its message they are) is written to the Log from
// them, however many there are (more than one writev takes): the line reads
// back as the text the model read and the content as sent, History folded
// from it is the live one, and observers see the event without its data.
func TestAPromptInPiecesIsWrittenFromThem(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){text("read")}}
	home, ws := t.TempDir(), t.TempDir()
	rt := New(Config{Home: home, Provider: p, Model: "m", Tools: tools.Builtins()})
	s, err := rt.NewSession(ws)
	require.NoError(t, err)

	// 1,500 blocks of 1 KiB, each quoted as a client may (escapes encoding/json
	// would not write), with Pixir's own separators between them.
	block := strings.Repeat(`line \"q\"\t\u00e9\/ `, 1024/20)
	var pieces [][]byte
	sep := []byte(`\n`)
	pieces = append(pieces, []byte(`"`))
	for i := range 1500 {
		if i > 0 {
			pieces = append(pieces, sep)
		}
		pieces = append(pieces, []byte(block))
	}
	pieces = append(pieces, []byte(`"`))
	var want string
	require.NoError(t, json.Unmarshal(bytes.Join(pieces, nil), &want))
	require.Greater(t, piecesLen(pieces), largeEvent)
	content := json.RawMessage(`[{"type":"text","text":"as sent"}]`)

	var seen recorder
	_, err = s.Prompt(context.Background(), Prompt{Text: want, TextJSON: pieces, Content: content}, TurnOptions{Observe: seen.observe})
	require.NoError(t, err)
	require.Equal(t, want, p.reqs[0].Messages[0].Text, "the model reads Text")
	require.Equal(t, EventUserMessage, seen.events[0].Type)
	require.Nil(t, seen.events[0].Data, "observers see a prompt in pieces without its data")
	rt.Close()

	events, report, err := ReadLog(s.LogPath())
	require.NoError(t, err)
	require.True(t, report.Intact())
	var d UserMessageData
	require.NoError(t, json.Unmarshal(events[0].Data, &d))
	require.Equal(t, want, d.Text)
	require.JSONEq(t, string(content), string(d.Content))

	rt2 := New(Config{Home: home, Provider: p, Model: "m", Tools: tools.Builtins()})
	defer rt2.Close()
	s2, _, err := rt2.OpenSession(s.ID(), ws, nil)
	require.NoError(t, err)
	require.Equal(t, p.reqs[0].Messages[0], s2.historyCopy()[0], "History folded from the Log is the live one")
}

// A prompt in pieces under largeEvent is encoded whole, as any other.
func TestASmallPromptInPiecesIsEncodedWhole(t *testing.T) {
	raw, pieces, err := encodeEventData(UserMessageData{Text: "a\nb", textJSON: [][]byte{[]byte(`"a`), []byte(`\n`), []byte(`b"`)}})
	require.NoError(t, err)
	require.Nil(t, pieces)
	require.JSONEq(t, `{"text":"a\nb"}`, string(raw))
}
