package scripted

import (
	"testing"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
)

func TestConversationCounterCountsOnlyWhatIsNew(t *testing.T) {
	var c conversationCounter
	full := func(msgs []provider.Message) int {
		n := 0
		for _, m := range msgs {
			n += messageRunes(m)
		}
		return n
	}
	history := make([]provider.Message, 0, 16)
	history = append(history, user("héllo"), asst("world"))
	require.Equal(t, full(history), c.runes(history))
	require.Equal(t, counted{messages: 2, runes: 10}, c.seen[seenKey(history)])

	// The session grows its History: the same first message, more after.
	history = append(history, tool("read", `{"ok":true}`), provider.Message{Role: provider.RoleAssistant,
		ToolCalls: []provider.ToolCall{{ID: "c", Name: "read", Arguments: []byte(`{"path":"é"}`)}}})
	require.Equal(t, full(history), c.runes(history))
	require.Equal(t, 4, c.seen[seenKey(history)].messages, "only the two new messages were counted")

	// Another conversation, and a shorter view of the first, count whole.
	other := []provider.Message{user("other")}
	require.Equal(t, 5, c.runes(other))
	require.Equal(t, full(history[:1]), c.runes(history[:1]))
	require.Equal(t, 0, c.runes(nil))
}

func seenKey(msgs []provider.Message) weak.Pointer[provider.Message] { return weak.Make(&msgs[0]) }

// A workflow's children are many live conversations at once (a finished
// child keeps its History): once forgetAfter of them were remembered and
// none was gone, every later call swept all of them and remembered
// nothing more, so each new conversation paid the sweep at every call and
// was counted whole again at its next.
func TestConversationCounterRemembersNewConversationsWhenAllAreAlive(t *testing.T) {
	var c conversationCounter
	alive := make([][]provider.Message, forgetAfter)
	for i := range alive {
		alive[i] = []provider.Message{user("child")}
		require.Equal(t, 5, c.runes(alive[i]))
	}
	history := make([]provider.Message, 0, 4)
	history = append(history, user("héllo"))
	require.Equal(t, 5, c.runes(history))
	require.Equal(t, counted{messages: 1, runes: 5}, c.seen[seenKey(history)], "remembered although every other is alive")
	require.LessOrEqual(t, len(c.seen), forgetAfter)
	history = append(history, asst("world"))
	require.Equal(t, 10, c.runes(history))
	require.Equal(t, 2, c.seen[seenKey(history)].messages)
	for i := range alive { // the forgotten ones count whole again, rightly
		require.Equal(t, 5, c.runes(alive[i]))
		require.LessOrEqual(t, len(c.seen), forgetAfter)
	}
}
