package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// Limits of what one call's result keeps.
const (
	// textLimit bounds the text the model reads, and each text block shown.
	textLimit = 64 << 10
	// mediaLimit bounds an image, audio or binary resource shown to the
	// user (and kept in the Log); a larger one is named, not shown.
	mediaLimit = 512 << 10
)

// CallOutput is an MCP tool's result as the model reads it: the text of its
// content (images, audio and resources named by a line each) and its
// structured content. Both are truncated with a marker past 64 KiB.
type CallOutput struct {
	Content           string `json:"content,omitempty"`
	StructuredContent any    `json:"structured_content,omitempty"`
}

// convert turns a tool's result into a Pixir result: the model reads the
// CallOutput; the user sees the blocks. A result the server marks isError
// is {ok:false, output}: the tool ran and failed, in its own words.
func convert(res *callResult) tools.Result {
	var text []string
	var blocks []tools.Block
	for _, c := range res.Content {
		line, block := convertContent(c)
		if line != "" {
			text = append(text, line)
		}
		if block != nil {
			blocks = append(blocks, *block)
		}
	}
	out := CallOutput{Content: tools.Truncate(strings.Join(text, "\n"), textLimit)}
	if res.StructuredContent != nil {
		structured, err := json.Marshal(res.StructuredContent)
		switch {
		case err != nil:
			out.StructuredContent = fmt.Sprintf("(structured content that does not encode: %v)", err)
		case len(structured) > textLimit:
			out.StructuredContent = tools.Truncate(string(structured), textLimit)
		default:
			out.StructuredContent = json.RawMessage(structured)
			if sameJSON(out.Content, structured) {
				// Servers repeat structured content as text for older
				// clients: once is enough for the model.
				out.Content = ""
			}
		}
	}
	if out.Content == "" && out.StructuredContent == nil {
		out.Content = "(the tool returned no content)"
	}
	return tools.Result{OK: !res.IsError, Output: out, Blocks: blocks}
}

// convertContent is the model's line and the user's block for one piece of
// content.
func convertContent(c content) (string, *tools.Block) {
	switch c.Type {
	case "text":
		return c.Text, &tools.Block{Type: "text", Text: tools.Truncate(c.Text, textLimit)}
	case "image", "audio":
		return media(c.Type, c.MIMEType, c.Data)
	case "resource_link":
		line := fmt.Sprintf("[resource link %q: %s", c.Name, c.URI)
		if c.MIMEType != "" {
			line += " (" + c.MIMEType + ")"
		}
		if c.Description != "" {
			line += " — " + c.Description
		}
		return line + "]", &tools.Block{Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title,
			Description: c.Description, MimeType: c.MIMEType, Size: c.Size}
	case "resource":
		r := c.Resource
		if r == nil {
			return "", nil
		}
		if r.Blob == nil {
			return fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", r.URI, r.Text),
				&tools.Block{Type: "resource", URI: r.URI, MimeType: r.MIMEType, Text: tools.Truncate(r.Text, textLimit)}
		}
		line := fmt.Sprintf("[resource %s (%s, %d bytes): binary, shown to the user, not readable here]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
		if len(r.Blob) > mediaLimit {
			return line, tooBig("resource "+r.URI, r.MIMEType, len(r.Blob))
		}
		return line, &tools.Block{Type: "resource", URI: r.URI, MimeType: r.MIMEType, Blob: base64.StdEncoding.EncodeToString(r.Blob)}
	}
	return fmt.Sprintf("[content of type %q that Pixir does not show]", c.Type), nil
}

func media(kind, mime string, data []byte) (string, *tools.Block) {
	line := fmt.Sprintf("[%s (%s, %d bytes): shown to the user, not readable here]", kind, orUnknown(mime), len(data))
	if len(data) > mediaLimit {
		return line, tooBig(kind, mime, len(data))
	}
	return line, &tools.Block{Type: kind, MimeType: mime, Data: base64.StdEncoding.EncodeToString(data)}
}

// tooBig is the text shown instead of media past mediaLimit.
func tooBig(what, mime string, n int) *tools.Block {
	return &tools.Block{Type: "text", Text: fmt.Sprintf("[%s (%s, %d bytes) not shown: larger than %d KiB]", what, orUnknown(mime), n, mediaLimit>>10)}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// sameJSON reports whether text is the JSON document b, up to whitespace
// and key order.
func sameJSON(text string, b []byte) bool {
	var x, y any
	if json.Unmarshal([]byte(text), &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
