package runtime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func appendTexts(t *testing.T, l *Log, texts ...string) {
	t.Helper()
	for _, text := range texts {
		data, _ := json.Marshal(UserMessageData{Text: text})
		require.NoError(t, l.Append(&Event{SessionID: "s", Type: EventUserMessage, Data: data}))
	}
}

func TestLogAppendsAndReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep", "s.ndjson")
	l, events, report, err := OpenLog(path)
	require.NoError(t, err)
	require.Empty(t, events)
	require.Equal(t, LoadReport{}, report)
	appendTexts(t, l, "one", "two")
	require.NoError(t, l.Close())
	require.Error(t, l.Append(&Event{Type: EventUserMessage}), "appending to a closed log fails")

	l, events, report, err = OpenLog(path)
	require.NoError(t, err)
	require.Equal(t, 2, report.Events)
	require.Equal(t, []int64{1, 2}, []int64{events[0].Seq, events[1].Seq})
	require.NotEqual(t, events[0].ID, events[1].ID)
	appendTexts(t, l, "three")
	require.NoError(t, l.Close())
	events, _, err = ReadLog(path)
	require.NoError(t, err)
	require.Len(t, events, 3)
	require.Equal(t, int64(3), events[2].Seq, "seq continues across opens")
}

func TestLogToleratesDamage(t *testing.T) {
	tests := []struct {
		name      string
		tail      string
		torn      int
		skipped   int
		wantTexts []string
	}{
		{"clean", "", 0, 0, []string{"one", "two"}},
		{"torn last line", `{"id":"x","seq":3,"ty`, 21, 0, []string{"one", "two"}},
		{"complete last event without newline", `{"id":"x","session_id":"s","seq":3,"type":"user_message","data":{"text":"three"}}`, 0, 0, []string{"one", "two", "three"}},
		{"garbage line in the middle", "not json\n" + `{"id":"y","session_id":"s","seq":3,"type":"user_message","data":{"text":"three"}}` + "\n", 0, 1, []string{"one", "two", "three"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.ndjson")
			l, _, _, err := OpenLog(path)
			require.NoError(t, err)
			appendTexts(t, l, "one", "two")
			require.NoError(t, l.Close())
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(tt.tail)
			require.NoError(t, err)
			require.NoError(t, f.Close())

			l, events, report, err := OpenLog(path)
			require.NoError(t, err)
			require.Equal(t, tt.torn, report.TornBytes)
			require.Equal(t, tt.skipped, report.Skipped)
			var texts []string
			for _, ev := range events {
				var d UserMessageData
				require.NoError(t, json.Unmarshal(ev.Data, &d))
				texts = append(texts, d.Text)
			}
			require.Equal(t, tt.wantTexts, texts)

			// Appends after the repair land on a line of their own and the
			// whole file reads back cleanly.
			appendTexts(t, l, "after")
			require.NoError(t, l.Close())
			_, report, err = ReadLog(path)
			require.NoError(t, err)
			require.Equal(t, 0, report.TornBytes)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(string(data), "\n"))
			require.Contains(t, report.String(), "events")
		})
	}
}
