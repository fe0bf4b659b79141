package acp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// largeText is the length from which a prompt's text is kept as the JSON
// string it came as until promptText decodes it.
const largeText = 16 << 10

// decodePrompt decodes session/prompt params as decodeParams does, with
// the same errors, except for the large texts of the content blocks (a
// block's text, a resource's text or blob): a pasted file can be tens of
// megabytes, and json.Unmarshal would check it, unquote it and copy it
// before promptText copies it once more. Each such text is left out of what
// encoding/json decodes and kept as the raw JSON string, a slice of params,
// which promptText decodes once, straight into the text the model reads.
//
// Only texts under keys that encoding/json could not match otherwise are
// left out ("text" and "blob" spelled so, once in their object, in the one
// "prompt" member); anything else is decoded as usual.
func decodePrompt(params json.RawMessage) (*PromptRequest, error) {
	prompt, ok := onlyMember(params, "prompt")
	if !ok || prompt[0] != '[' || !utf8.Valid(prompt) {
		// The ordinary way, which also reports what is wrong with params.
		// Invalid UTF-8 is mended there, in the decoded content.
		return decodeParams[PromptRequest](params)
	}
	blocks, err := jsonraw.Elements(prompt)
	if err != nil {
		return decodeParams[PromptRequest](params)
	}
	// large are the texts left out, in order; each slot says where it goes.
	type slot struct {
		block int
		field string // "text", "resource.text", "resource.blob"
		raw   []byte
	}
	var large []slot
	for i, b := range blocks {
		if text, ok := onlyMember(b, "text"); ok && isLarge(text) {
			large = append(large, slot{i, "text", text})
		}
		if res, ok := onlyMember(b, "resource"); ok && res[0] == '{' {
			for _, f := range []string{"text", "blob"} {
				if text, ok := onlyMember(res, f); ok && isLarge(text) {
					large = append(large, slot{i, "resource." + f, text})
				}
			}
		}
	}
	slices.SortFunc(large, func(a, b slot) int { return offset(params, a.raw) - offset(params, b.raw) })
	if len(large) == 0 {
		p, err := decodeParams[PromptRequest](params)
		if err == nil {
			p.content = prompt
		}
		return p, err
	}
	// params with each large text replaced by "": the texts are slices of
	// params in increasing order.
	slim := make([]byte, 0, 4<<10)
	at := 0
	for _, l := range large {
		start := offset(params, l.raw)
		slim = append(slim, params[at:start]...)
		slim = append(slim, `""`...)
		at = start + len(l.raw)
	}
	slim = append(slim, params[at:]...)
	p, err := decodeParams[PromptRequest](slim)
	if err != nil {
		return nil, err
	}
	if len(p.Prompt) != len(blocks) {
		return nil, fmt.Errorf("internal error: %d content blocks decoded from %d", len(p.Prompt), len(blocks))
	}
	for _, l := range large {
		b := &p.Prompt[l.block]
		switch l.field {
		case "text":
			b.rawText = l.raw
		case "resource.text":
			b.Resource.rawText = l.raw
		case "resource.blob":
			b.Resource.rawBlob = l.raw
		}
	}
	p.content = prompt
	return p, nil
}

// onlyMember returns the value of the member key of the JSON object obj,
// when it is the only member whose key encoding/json would match to key
// (it matches case-insensitively).
func onlyMember(obj []byte, key string) ([]byte, bool) {
	_, members, err := jsonraw.Scan(obj)
	if err != nil {
		return nil, false
	}
	var value []byte
	n := 0
	for _, m := range members {
		if strings.EqualFold(m.Key, key) {
			if m.Key != key {
				return nil, false
			}
			value = m.Value
			n++
		}
	}
	return value, n == 1
}

func isLarge(v []byte) bool { return len(v) >= largeText && v[0] == '"' }

// offset is where sub, a slice of whole that jsonraw returned, starts in
// it: both end at the end of the same array.
func offset(whole, sub []byte) int {
	return cap(whole) - cap(sub)
}

// promptText is the prompt as the model reads it: text as is, embedded
// resources inline with their uri, links as references.
func promptText(blocks []ContentBlock) string {
	text, _ := modelText(blocks)
	return text
}

// modelText is promptText, and with it, when the prompt has large texts
// that decodePrompt kept as the JSON strings they came as, the same text
// as one JSON string in pieces for the Log (runtime.Prompt.TextJSON): the
// large texts are the slices of the client's message they are, and only
// the small parts around them are quoted here. So a pasted file of
// megabytes is recorded without being encoded again or copied. quoted is
// nil when there is no such text.
func modelText(blocks []ContentBlock) (text string, quoted [][]byte) {
	if len(blocks) == 1 && blocks[0].Type == "text" && blocks[0].rawText == nil {
		return blocks[0].Text, nil
	}
	w := promptWriter{}
	size := 0
	for _, c := range blocks {
		size += len(c.Text) + len(c.rawText) + len(c.Name) + 2*len(c.URI) + 64
		if r := c.Resource; r != nil && r.Text != nil {
			size += len(*r.Text) + len(r.rawText)
		}
		w.quoting = w.quoting || c.rawText != nil || c.Resource != nil && c.Resource.rawText != nil
	}
	w.text.Grow(size)
	for _, c := range blocks {
		if w.text.Len() > 0 {
			w.literal("\n")
		}
		switch c.Type {
		case "text":
			w.block(c.rawText, c.Text)
		case "resource_link":
			w.literal(fmt.Sprintf("[%s](%s)", c.Name, c.URI))
		case "resource":
			if c.Resource.Text != nil {
				w.literal(fmt.Sprintf("<resource uri=%q>\n", c.Resource.URI))
				w.block(c.Resource.rawText, *c.Resource.Text)
				w.literal("\n</resource>")
			} else {
				w.literal(fmt.Sprintf("<resource uri=%q>(binary, %d base64 bytes)</resource>", c.Resource.URI, textLen(c.Resource.rawBlob, *c.Resource.Blob)))
			}
		}
	}
	return w.text.String(), w.quotedPieces()
}

// promptWriter writes the model's text and, when quoting, the same text as
// JSON string pieces.
type promptWriter struct {
	text    strings.Builder
	quoting bool
	quoted  [][]byte
	// pending is the quoted text written since the last raw piece.
	pending []byte
}

// literal writes a text of Pixir's or a small text of the client's.
func (w *promptWriter) literal(s string) {
	w.text.WriteString(s)
	if w.quoting {
		if w.pending == nil {
			w.pending = append(make([]byte, 0, 256), '"')
		}
		w.pending = jsonraw.AppendEscaped(w.pending, s)
	}
}

// block writes a block's text: decoded from raw, the JSON string
// decodePrompt kept, or as decoded when raw is nil.
func (w *promptWriter) block(raw []byte, decoded string) {
	if raw == nil {
		w.literal(decoded)
		return
	}
	jsonraw.UnquoteTo(&w.text, raw) // raw was scanned: it is a JSON string
	// A JSON string's content, escapes and all, is a valid part of another
	// one, and decodes to the same text there: the pieces around it end
	// with no escape begun, so nothing joins across them.
	if w.pending == nil {
		w.pending = []byte{'"'}
	}
	w.quoted = append(w.quoted, w.pending, raw[1:len(raw)-1])
	w.pending = []byte{}
}

func (w *promptWriter) quotedPieces() [][]byte {
	if !w.quoting {
		return nil
	}
	return append(w.quoted, append(w.pending, '"'))
}

// textLen is the length of a block's text once decoded.
func textLen(raw []byte, decoded string) int {
	if raw == nil {
		return len(decoded)
	}
	var n counter
	jsonraw.UnquoteTo(&n, raw)
	return int(n)
}

// counter is a jsonraw.StringWriter that only counts bytes.
type counter int

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }
func (c *counter) WriteByte(byte) error        { *c++; return nil }
func (c *counter) WriteRune(r rune) (int, error) {
	n := utf8.RuneLen(r)
	if n < 0 {
		n = 3 // U+FFFD
	}
	*c += counter(n)
	return n, nil
}
