// Command minimalagent is the yardstick of the start-up and large-prompt
// benchmarks: the least an ACP agent written in Go can do. It decodes each
// line once with encoding/json, appends a prompt's line once to its
// session's log file, and replies. It never calls a model.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	URI      string `json:"uri,omitempty"`
	Resource *struct {
		URI  string  `json:"uri"`
		Text *string `json:"text,omitempty"`
		Blob *string `json:"blob,omitempty"`
	} `json:"resource,omitempty"`
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		ProtocolVersion int            `json:"protocolVersion"`
		Cwd             string         `json:"cwd"`
		SessionID       string         `json:"sessionId"`
		Prompt          []contentBlock `json:"prompt"`
	} `json:"params"`
}

type reply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriter(os.Stdout)
	logs := map[string]*os.File{}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			answer(line, logs, out)
			_ = out.Flush()
		}
		if err != nil {
			return
		}
	}
}

func answer(line []byte, logs map[string]*os.File, out io.Writer) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		write(out, reply{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: map[string]any{"code": -32700, "message": err.Error()}})
		return
	}
	if m.ID == nil {
		return // a notification
	}
	r := reply{JSONRPC: "2.0", ID: m.ID}
	switch m.Method {
	case "initialize":
		r.Result = map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}}
	case "session/new":
		id := strconv.FormatInt(time.Now().UnixNano(), 36)
		dir := filepath.Join(m.Params.Cwd, ".minimal")
		f, err := os.OpenFile(filepath.Join(dir, id+".ndjson"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			if err = os.MkdirAll(dir, 0o755); err == nil {
				f, err = os.OpenFile(filepath.Join(dir, id+".ndjson"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			}
		}
		if err != nil {
			r.Error = map[string]any{"code": -32603, "message": err.Error()}
			break
		}
		logs[id] = f
		r.Result = map[string]any{"sessionId": id}
	case "session/prompt":
		f := logs[m.Params.SessionID]
		if f == nil {
			r.Error = map[string]any{"code": -32002, "message": "no such session"}
			break
		}
		if _, err := f.Write(line); err != nil {
			r.Error = map[string]any{"code": -32603, "message": err.Error()}
			break
		}
		r.Result = map[string]any{"stopReason": "end_turn"}
	default:
		r.Error = map[string]any{"code": -32601, "message": fmt.Sprintf("method not found: %s", m.Method)}
	}
	write(out, r)
}

func write(out io.Writer, r reply) {
	b, _ := json.Marshal(r)
	_, _ = out.Write(append(b, '\n'))
}
