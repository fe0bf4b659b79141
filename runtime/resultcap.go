package runtime

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/pixir-go/pixir/tools"
)

// MaxToolResultBytes bounds a tool result's output as the model reads it
// and as one Log line holds it. Tools bound their own output well below it
// (read 256 KiB, bash and grep 64 KiB, an MCP image 512 KiB) and a
// workflow cuts its lists (workflows.Outcome.Bounded); this is the guard
// for whatever still comes out larger, so that no result makes a Log line,
// a model request or an editor message without bound.
const MaxToolResultBytes = 1 << 20

// boundResult returns r, or, when its output encodes to more than
// MaxToolResultBytes, r with its output replaced by the beginning of that
// encoding, as text, and a marker saying how much was cut. The error is
// kept whole: it is the model's to read.
func boundResult(r tools.Result) tools.Result {
	if r.Output == nil {
		return r
	}
	out, err := json.Marshal(r.Output)
	if err != nil || len(out) <= MaxToolResultBytes {
		return r
	}
	// The head goes into the envelope as a string, its quotes escaped:
	// shorten it until the escaped text fits, with room for the marker.
	const room = MaxToolResultBytes - 1024
	head := out[:room]
	for {
		head = wholeRunes(head)
		quoted, _ := json.Marshal(string(head))
		if len(quoted) <= room {
			break
		}
		// Escaping grew it by len(quoted)/len(head): shrink by as much,
		// and a little more so that the loop ends.
		head = head[:len(head)*room/len(quoted)-16]
	}
	r.Output = fmt.Sprintf("%s\n[… truncated %d bytes of %d: a tool result is capped at %d KiB, and this is the beginning of the output's JSON; ask for less (a narrower range, fewer items, a part of the workflow)]",
		head, len(out)-len(head), len(out), MaxToolResultBytes>>10)
	return r
}

// wholeRunes cuts b after its last whole character.
func wholeRunes(b []byte) []byte {
	for len(b) > 0 {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}
