package scripted

import (
	"sync"
	"unicode/utf8"
	"weak"

	"github.com/pixir-go/pixir/runtime/provider"
)

// conversationCounter counts the characters of conversations for usage,
// without counting a long session's history again at every model call.
// A session sends its History as one growing slice: the same first element,
// more messages after the ones seen last time. So the counter remembers,
// per first element, how many messages it counted and their characters,
// and counts only the new ones: a turn's cost does not grow with the
// session's length. It holds weak pointers, so it keeps no History alive.
type conversationCounter struct {
	mu   sync.Mutex
	seen map[weak.Pointer[provider.Message]]counted
}

type counted struct{ messages, runes int }

// forgetAfter bounds the conversations remembered; past it, those whose
// History is gone are forgotten, or all of them when most are alive.
const forgetAfter = 64

func (c *conversationCounter) runes(msgs []provider.Message) int {
	if len(msgs) == 0 {
		return 0
	}
	key := weak.Make(&msgs[0])
	c.mu.Lock()
	done := c.seen[key]
	c.mu.Unlock()
	if done.messages > len(msgs) { // not a longer version of what was seen
		done = counted{}
	}
	total := done.runes
	for _, m := range msgs[done.messages:] {
		total += messageRunes(m)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[weak.Pointer[provider.Message]]counted{}
	}
	if len(c.seen) >= forgetAfter {
		for k := range c.seen {
			if k.Value() == nil {
				delete(c.seen, k)
			}
		}
		if len(c.seen) > forgetAfter/2 {
			// Most are alive (a workflow's children keep their
			// Histories): forget them all rather than sweep them again at
			// every call and remember nothing new. Each is counted whole
			// once more at its next call, at most once per forgetAfter/2
			// conversations.
			clear(c.seen)
		}
	}
	c.seen[key] = counted{messages: len(msgs), runes: total}
	return total
}

func messageRunes(m provider.Message) int {
	n := utf8.RuneCountInString(m.Text)
	for _, tc := range m.ToolCalls {
		n += utf8.RuneCountInString(tc.Name) + utf8.RuneCount(tc.Arguments)
	}
	return n
}
