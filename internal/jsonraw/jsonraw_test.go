package jsonraw

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestAppendStringEscapesWhatJSONRequires(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain <b>&</b>", `"plain <b>&</b>"`},
		{"quote \" backslash \\", `"quote \" backslash \\"`},
		{"line\nfeed\ttab\rreturn\bback\fform", `"line\nfeed\ttab\rreturn\bback\fform"`},
		{"nul \x00 unit \x1f del \x7f", `"nul \u0000 unit \u001f del ` + "\x7f" + `"`},
		{"élodie → 😀", `"élodie → 😀"`},
		{"separators \u2028 \u2029", `"separators \u2028 \u2029"`},
		{"bad \xff byte, cut \xe2\x86", `"bad \ufffd byte, cut \ufffd\ufffd"`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, string(AppendString(nil, tt.in)), "%q", tt.in)
		require.Equal(t, tt.want, string(AppendString(nil, []byte(tt.in))), "%q as bytes", tt.in)
	}
}

func TestScanSplitsAnObject(t *testing.T) {
	v, members, err := Scan([]byte(` {"jsonrpc":"2.0", "id" : -1.5e3,"params":{"a":[1,{"b":null}]},"k\u00e9y":true,"id":"x"} `))
	require.NoError(t, err)
	require.Equal(t, byte('{'), v[0])
	require.Equal(t, byte('}'), v[len(v)-1])
	var got []string
	for _, m := range members {
		got = append(got, m.Key+"="+string(m.Value))
	}
	require.Equal(t, []string{`jsonrpc="2.0"`, `id=-1.5e3`, `params={"a":[1,{"b":null}]}`, `kéy=true`, `id="x"`}, got)

	raw, ok := Lookup([]byte(`{"id":1,"id":2}`), "id")
	require.True(t, ok)
	require.Equal(t, "2", string(raw), "the last of a repeated key wins, as in encoding/json")
	_, ok = Lookup([]byte(`{"id":1}`), "method")
	require.False(t, ok)
}

func TestElementsSplitsAnArray(t *testing.T) {
	elements, err := Elements([]byte(` [1, "two" ,{"three":[3]}, [] ] `))
	require.NoError(t, err)
	var got []string
	for _, e := range elements {
		got = append(got, string(e))
	}
	require.Equal(t, []string{`1`, `"two"`, `{"three":[3]}`, `[]`}, got)
	empty, err := Elements([]byte(`[]`))
	require.NoError(t, err)
	require.Empty(t, empty)
	for _, in := range []string{`{}`, `[1,]`, `[1] 2`, `"x"`} {
		_, err := Elements([]byte(in))
		require.ErrorIs(t, err, ErrInvalid, "%q", in)
	}
}

func TestScanRefusesWhatIsNotJSON(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[01]`, `-`, `1.`, `1e`, `.5`, `tru`, `truex`,
		`"unterminated`, "\"control \x01\"", `"bad \x escape"`, `"\u12g4"`, `{} {}`, `{"a":1}x`, `nul`,
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	} {
		_, _, err := Scan([]byte(in))
		require.ErrorIs(t, err, ErrInvalid, "%q", in)
		require.False(t, Valid([]byte(in)), "%q", in)
	}
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	require.True(t, Valid([]byte(deep)), "encoding/json's own limit is accepted")
}

// FuzzScanAgreesWithEncodingJSON: Scan accepts exactly what json.Valid
// accepts, and an object's members are what encoding/json decodes.
func FuzzScanAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"hi \"there\"\n"}]}}`,
		`[1,2.5e-3,-0,true,false,null,"\u00e9\ud83d\ude00"]`, `{"a":{"b":{"c":[]}},"a":1}`, `"\xff"`, `{"\xff":1}`,
		`  42  `, `{"k\\":"v\/"}`, `{]`, `["\u00"]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		value, members, err := Scan(data)
		require.Equal(t, json.Valid(data), err == nil, "%q", data)
		require.Equal(t, err == nil, Valid(data))
		if err != nil || value[0] != '{' {
			return
		}
		var want map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &want))
		got := map[string]json.RawMessage{}
		for _, m := range members {
			got[m.Key] = m.Value
		}
		require.Equal(t, len(want), len(got))
		for k, v := range want {
			require.Equal(t, string(v), string(got[k]), "member %q", k)
		}
	})
}

// FuzzAppendStringAgreesWithEncodingJSON: what AppendString writes decodes
// to what encoding/json's own quoting decodes to, and is valid UTF-8.
func FuzzAppendStringAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{"", "plain", "\"\\\n\x00\x1f", "é→😀", "\u2028", "\xff\xe2\x86", "<&>"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		quoted := AppendString(nil, s)
		require.True(t, utf8.Valid(quoted))
		var got, want string
		require.NoError(t, json.Unmarshal(quoted, &got), "%s", quoted)
		std, err := json.Marshal(s)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(std, &want))
		require.Equal(t, want, got)
		require.LessOrEqual(t, len(quoted), len(s)*6+2)
	})
}

// FuzzAppendStringHTMLIsEncodingJSONs: AppendStringHTML writes what
// json.Marshal writes, byte for byte.
func FuzzAppendStringHTMLIsEncodingJSONs(f *testing.F) {
	for _, seed := range []string{"", "plain", "\"\\\n\r\t\b\f\x00\x1f\x7f", "é→😀", "\u2028\u2029", "\xff\xe2\x86", "<&>", "a\xc0\x80b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		std, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(std), string(AppendStringHTML(nil, s)))
	})
}

var benchText = func() string {
	var b strings.Builder
	for b.Len() < 8<<20 {
		b.WriteString("2026-11-22T10:00:00Z INFO request path=\"/api/v1/items\" user=élodie\ttook 12 ms →\n")
	}
	return b.String()
}()

func BenchmarkAppendString(b *testing.B) {
	b.Run("jsonraw", func(b *testing.B) {
		b.SetBytes(int64(len(benchText)))
		for b.Loop() {
			AppendString(make([]byte, 0, QuotedLen(len(benchText))), benchText)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchText)))
		for b.Loop() {
			_, _ = json.Marshal(benchText)
		}
	})
}

func BenchmarkScan(b *testing.B) {
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "params": map[string]any{"text": benchText}})
	b.Run("jsonraw", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			_, _, _ = Scan(line)
		}
	})
	b.Run("encoding-json-valid", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			json.Valid(line)
		}
	})
}

// FuzzUnquoteToAgreesWithEncodingJSON: UnquoteTo decodes every JSON string
// to what json.Unmarshal decodes it to.
func FuzzUnquoteToAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{`""`, `"plain"`, `"esc \" \\ \/ \b \f \n \r \t"`, `"\u00e9\ud83d\ude00"`, `"lone \ud800 x"`,
		`"\ud800\u0041"`, "\"bad \xff\xe2\x82\"", `"é→😀"`, `"\u2028"`, `"unterminated`, `"\x"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, quoted []byte) {
		var b strings.Builder
		ok := UnquoteTo(&b, quoted)
		var want string
		err := json.Unmarshal(quoted, &want)
		if len(quoted) > 1 && quoted[0] == '"' && quoted[len(quoted)-1] == '"' && Valid(quoted) {
			require.True(t, ok, "%q", quoted)
			require.NoError(t, err)
			require.Equal(t, want, b.String(), "%q", quoted)
		} else if ok {
			// Accepted text must at least be what encoding/json accepts.
			require.NoError(t, err, "%q", quoted)
		}
	})
}
