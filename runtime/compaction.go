package runtime

// Summarizers of a compaction.
const (
	// SummarizerModel asks the model to summarize the older turns.
	SummarizerModel = "model"
	// SummarizerFallback makes no model call: the older turns become a
	// digest with their tool results cut short.
	SummarizerFallback = "fallback"
)

// CompactionConfig says when and how a conversation that nears its
// model's context window is compacted.
type CompactionConfig struct {
	// Disabled turns compaction off.
	Disabled bool
	// Threshold is the fraction of the context window the next request may
	// reach before the conversation is compacted (default 0.8).
	Threshold float64
	// KeepRecent is the fraction of the window the most recent messages
	// keep word for word (default 0.3).
	KeepRecent float64
	// Summarizer is SummarizerModel (the default) or SummarizerFallback.
	Summarizer string
}
