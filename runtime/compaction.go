// Compaction: when a conversation nears its model's context window (as
// configured, or as learned from a context-length error), its older
// messages are replaced by a summary (the model's; or, without it, a
// digest made by Pixir) and the most recent ones are kept word for word.
// The Log records each compaction, so History folded from it, the replay
// of session/load and later requests all use the compacted conversation.

package runtime

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/pixir-go/pixir/runtime/provider"
)

// Summarizers of a compaction.
const (
	// SummarizerModel asks the model to summarize the older turns.
	SummarizerModel = "model"
	// SummarizerFallback makes no model call: the older turns become a
	// digest with their tool results cut short.
	SummarizerFallback = "fallback"
)

// Why a compaction happened.
const (
	CompactionThreshold     = "threshold"      // the next request would pass the threshold
	CompactionContextLength = "context_length" // the provider refused a request as too long
)

// Defaults of CompactionConfig.
const (
	DefaultCompactionThreshold = 0.8
	DefaultCompactionKeep      = 0.3
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

func (c CompactionConfig) threshold() float64 {
	if c.Threshold <= 0 || c.Threshold >= 1 {
		return DefaultCompactionThreshold
	}
	return c.Threshold
}

func (c CompactionConfig) keep() float64 {
	if c.KeepRecent <= 0 || c.KeepRecent >= c.threshold() {
		return min(DefaultCompactionKeep, c.threshold()/2)
	}
	return c.KeepRecent
}

// CompactionData is the Data of a compaction event: what replaced the
// older messages of History. History after it is the summary (as one user
// message) and the last Kept messages of History before it, each tool
// result among them longer than TruncateResults bytes (when set) cut to
// that size.
type CompactionData struct {
	CompactionID string `json:"compaction_id"`
	// Reason is threshold or context_length; Method model or fallback.
	Reason string `json:"reason"`
	Method string `json:"method"`
	// Summary is what the older messages became.
	Summary         string `json:"summary"`
	Kept            int    `json:"kept"`
	TruncateResults int    `json:"truncate_results,omitempty"`
	// Replaced is how many messages the summary replaced.
	Replaced int `json:"replaced"`
	// TokensBefore and TokensAfter estimate the request before and after;
	// Window is the context window it was weighed against.
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after"`
	Window       int   `json:"window"`
	// ModelError says why the model's summary could not be used, when the
	// fallback replaced it.
	ModelError string `json:"model_error,omitempty"`
}

// CompactionProgressData is the ephemeral start of a compaction
// (compaction_progress) and each fragment of its summary as the model
// streams it (compaction_delta, Text set).
type CompactionProgressData struct {
	CompactionID string `json:"compaction_id"`
	Text         string `json:"text,omitempty"`
}

// summaryPrefix opens the message a summary becomes.
const summaryPrefix = "[Pixir, not the user] The conversation so far was compacted to fit the model's context window. Its summary:\n\n"

// summaryMessage is a compaction's summary as History holds it.
func summaryMessage(summary string) provider.Message {
	return provider.Message{Role: provider.RoleUser, Text: summaryPrefix + summary, FromPixir: true}
}

// compacted is History after a compaction of h.
func compacted(h []provider.Message, d CompactionData) []provider.Message {
	kept := h[max(0, len(h)-d.Kept):]
	out := make([]provider.Message, 0, len(kept)+1)
	out = append(out, summaryMessage(d.Summary))
	for _, m := range kept {
		if d.TruncateResults > 0 && m.Role == provider.RoleTool && len(m.Text) > d.TruncateResults {
			m.Text = cutResult(m.Text, d.TruncateResults)
		}
		out = append(out, m)
	}
	return out
}

// cutResult shortens a tool result for the model to about limit bytes,
// keeping its start and end, saying how much was left out.
func cutResult(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	head := limit * 3 / 4
	tail := limit - head
	h := strings.ToValidUTF8(text[:head], "")
	e := text[len(text)-tail:]
	for len(e) > 0 && !utf8.RuneStart(e[0]) {
		e = e[1:]
	}
	return fmt.Sprintf("%s\n[… %d bytes cut by compaction …]\n%s", h, len(text)-len(h)-len(e), e)
}

// messageBytes is what a message weighs in a request, roughly.
func messageBytes(m provider.Message) int {
	n := len(m.Text) + len(m.ToolCallID) + len(m.ToolName) + 16
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments) + len(tc.ProviderData) + 16
	}
	return n
}

func historyBytes(h []provider.Message) int {
	n := 0
	for _, m := range h {
		n += messageBytes(m)
	}
	return n
}

// bytesPerToken is the rough rule the estimates start from; each answer's
// reported input tokens correct it (Session.calib).
const bytesPerToken = 4

// tokens estimates the tokens of n bytes of a request of this session.
func (s *Session) tokens(n int) int64 {
	s.mu.Lock()
	c := s.calib
	s.mu.Unlock()
	if c <= 0 {
		c = 1
	}
	return int64(float64(n) / bytesPerToken * c)
}

// requestBytes is what a request of this session weighs: its system
// prompt, its tools and its History.
func (s *Session) requestBytes(specs []provider.ToolSpec) int {
	n := len(s.systemPrompt())
	for _, t := range specs {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	s.mu.Lock()
	n += s.histBytes
	s.mu.Unlock()
	return n
}

// calibrate corrects the estimates with what a provider counted: the
// request estimated at est bytes had in input tokens.
func (s *Session) calibrate(est int, in int) {
	c := calibration(est, in)
	if c == 0 {
		return
	}
	s.mu.Lock()
	s.calib = c
	s.mu.Unlock()
}

// calibration is the correction of the estimate of tokens that a request
// estimated at est bytes, counted in tokens by the provider, makes (0:
// none).
func calibration(est, in int) float64 {
	if est <= 0 || in <= 0 {
		return 0
	}
	return min(max(float64(in)*bytesPerToken/float64(est), 0.5), 4)
}

// compactionWindow is the context window compaction weighs requests
// against: configured for the model (or for the provider), or learned from
// a context-length error when that says less; 0 when unknown (no
// compaction).
func (r *Runtime) compactionWindow(model string) int {
	w := r.cfg.ModelInfo[model].ContextWindow
	if w <= 0 {
		w = r.cfg.ContextWindow
	}
	if learned := r.facts.window(model); learned > 0 && (w <= 0 || learned < w) {
		w = learned
	}
	return w
}

// generateFitting is generate, and when the provider refuses the request
// as longer than the model's context window, the window learned (from the
// error, or as a little less than the request), the conversation
// compacted and the call made once more.
func (t *turn) generateFitting(specs []provider.ToolSpec) (*provider.ModelResponse, *streamedSoFar, error) {
	resp, so, err := t.generate(specs)
	s := t.s
	if err == nil || t.cancelled() || so.text.Len()+so.reasoning.Len() > 0 || s.rt.cfg.Compaction.Disabled {
		return resp, so, err
	}
	window, ok := overflowOf(err)
	if !ok {
		return resp, so, err
	}
	model := s.Model()
	if window <= 0 {
		window = int(float64(s.tokens(s.requestBytes(specs))) * 0.9)
	}
	s.rt.facts.learn(model, window)
	done, cerr := t.compact(specs, s.rt.compactionWindow(model), CompactionContextLength)
	if cerr != nil {
		return nil, so, cerr
	}
	if !done {
		return resp, so, err
	}
	return t.generate(specs)
}

// contextOverflow is a provider error saying the request did not fit the
// model's context window, with the window when the server named it.
type contextOverflow interface {
	ContextOverflow() (window int, ok bool)
}

// overflowOf reports whether err says the request was too long for the
// context window, and the window it names (0 when none).
func overflowOf(err error) (int, bool) {
	var co contextOverflow
	if !errors.As(err, &co) {
		return 0, false
	}
	return co.ContextOverflow()
}

// compactIfNeeded compacts the session before a model call whose request
// (specs its tools) would pass the threshold of the window.
func (t *turn) compactIfNeeded(specs []provider.ToolSpec) error {
	s := t.s
	cfg := s.rt.cfg.Compaction
	window := s.rt.compactionWindow(s.Model())
	if cfg.Disabled || window <= 0 {
		return nil
	}
	before := s.tokens(s.requestBytes(specs))
	limit := cfg.threshold() * float64(window)
	if float64(before) <= limit {
		return nil
	}
	s.mu.Lock()
	hist := s.histBytes
	s.mu.Unlock()
	fixed := before - s.tokens(hist)
	if float64(fixed) >= limit {
		// The system prompt and the tools alone pass it: compacting the
		// conversation cannot help, and the provider will say so.
		return nil
	}
	_, err := t.compact(specs, window, CompactionThreshold)
	return err
}

// compact replaces the older messages of History with a summary, keeping
// the recent ones, records it in the Log and shows it. It reports false
// when there was nothing to compact.
func (t *turn) compact(specs []provider.ToolSpec, window int, reason string) (bool, error) {
	s := t.s
	cfg := s.rt.cfg.Compaction
	h := s.historyCopy()
	before := s.tokens(s.requestBytes(specs))
	fixed := int(before) - int(s.tokens(historyBytes(h)))
	// What is kept word for word: keep_recent of the window, and no more
	// than half the room the system prompt and the tools leave under the
	// threshold, so that the next call does not compact again at once.
	keepTokens := cfg.keep() * float64(window)
	if room := cfg.threshold()*float64(window) - float64(fixed); room/2 < keepTokens {
		keepTokens = max(room/2, 0)
	}
	keepBytes := int(keepTokens * bytesPerToken / s.calibration())
	cut, truncate := keptFrom(h, keepBytes)
	if cut == 0 && truncate == 0 {
		return false, nil
	}
	d := CompactionData{CompactionID: "cmp-" + uuid.Must(uuid.NewV7()).String()[24:], Reason: reason, Kept: len(h) - cut,
		Replaced: cut, TruncateResults: truncate, TokensBefore: before, Window: window, Method: SummarizerFallback}
	older := h[:cut]
	if err := t.emit(EventCompactionProgress, CompactionProgressData{CompactionID: d.CompactionID}); err != nil {
		return false, err
	}
	// What the summary may weigh: the room left under the threshold once
	// the fixed part and what is kept are counted, at most a tenth of the
	// window.
	room := int64(cfg.threshold()*float64(window)) - int64(fixed) - s.tokens(historyBytes(compacted(h, CompactionData{Kept: d.Kept, TruncateResults: truncate})))
	summaryTokens := max(min(room, int64(window)/10), 256)
	if len(older) > 0 {
		if cfg.Summarizer != SummarizerFallback {
			summary, err := t.modelSummary(d.CompactionID, older, window, summaryTokens)
			if err == nil {
				d.Summary, d.Method = summary, SummarizerModel
			} else {
				if errors.Is(err, ErrLogWrite) {
					return false, err
				}
				d.ModelError = err.Error()
			}
		}
		if d.Method == SummarizerFallback {
			d.Summary = digest(older, int(float64(summaryTokens)*bytesPerToken/max(s.calibration(), 0.5)))
		}
	} else {
		d.Summary = "(nothing earlier: only tool results of the last messages were cut short)"
	}
	next := compacted(h, d)
	d.TokensAfter = int64(fixed) + s.tokens(historyBytes(next))
	if err := t.emit(EventCompaction, d); err != nil {
		return false, err
	}
	s.mu.Lock()
	s.history, s.histBytes = next, historyBytes(next)
	s.mu.Unlock()
	if s.parent == nil {
		s.mu.Lock()
		s.context = d.TokensAfter
		u := UsageData{Used: s.context, Window: s.window}
		s.mu.Unlock()
		u.Total = s.Usage()
		if err := s.emitBackground(EventUsage, u); err != nil {
			s.rt.log.Warn("showing the session's usage", "session", s.ID(), "err", err)
		}
	}
	return true, nil
}

func (s *Session) calibration() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calib <= 0 {
		return 1
	}
	return s.calib
}

// keptFrom chooses what a compaction keeps of h: the messages from cut on,
// as many recent ones as weigh at most keep bytes, beginning with a user or
// assistant message so that no tool result loses its call. The last
// exchange is always kept; when it alone weighs more, its tool results are
// cut to truncate bytes each.
func keptFrom(h []provider.Message, keep int) (cut, truncate int) {
	if len(h) == 0 {
		return 0, 0
	}
	// The last exchange: from the last user or assistant message on.
	last := len(h) - 1
	for last > 0 && h[last].Role == provider.RoleTool {
		last--
	}
	cut = last
	weight := historyBytes(h[last:])
	for i := last - 1; i >= 0; i-- {
		w := messageBytes(h[i])
		if weight+w > keep {
			break
		}
		weight += w
		if h[i].Role != provider.RoleTool {
			cut = i
		}
	}
	if kept := historyBytes(h[cut:]); kept > keep {
		// The kept part alone is too heavy: cut its tool results.
		results := 0
		for _, m := range h[cut:] {
			if m.Role == provider.RoleTool {
				results++
			}
		}
		if results > 0 {
			truncate = max(keep/(2*results), 1024)
		}
	}
	return cut, truncate
}

// compactionPrompt asks the model for a summary.
const compactionPrompt = `You are compacting a conversation between a user and a coding agent so that the agent can go on with its work in a fresh context. Write a summary that lets the agent continue without the conversation: the user's goals and requests, in their words where it matters; decisions taken and why; what was done (files read, created and changed, commands run and their outcomes); what was found; errors met and how they were solved; the work in progress and the next steps. Keep file paths, names, numbers and error messages exact. Write it as notes, without a preamble.`

// modelSummary asks the model to summarize older messages, streaming the
// summary to the observer; its usage is recorded and charged. It fails
// when the model does, when the budget is spent, or when the answer is
// empty.
func (t *turn) modelSummary(id string, older []provider.Message, window int, summaryTokens int64) (string, error) {
	s := t.s
	if err := s.exhausted(); err != nil {
		return "", err
	}
	// The transcript, the instructions and the summary must fit the
	// window: the transcript takes at most half of it.
	limit := int(float64(window) / 2 * bytesPerToken / s.calibration())
	req := provider.ModelRequest{
		Model:  s.Model(),
		System: compactionPrompt,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: transcript(older, limit) +
			fmt.Sprintf("\n\nSummarize the conversation above in at most about %d words.", max(summaryTokens*3/4, 100))}},
	}
	var logErr error
	resp, err := s.rt.cfg.Provider.Generate(t.ctx, req, func(d provider.Delta) {
		if d.Kind != provider.DeltaText || d.Text == "" || logErr != nil {
			return
		}
		logErr = t.emit(EventCompactionDelta, CompactionProgressData{CompactionID: id, Text: d.Text})
	})
	if logErr != nil {
		return "", logErr
	}
	// What the server counted is charged, an answer that fails or is of
	// no use included.
	if resp != nil && resp.Usage != nil {
		if err := t.recordUsage(req.Model, *resp.Usage, "compaction", usageCounted); err != nil {
			return "", err
		}
	} else if resp != nil && err == nil {
		// A server that reports no usage: the call is estimated, as a
		// turn's is.
		u := s.estimatedUsage(len(req.System)+len(req.Messages[0].Text), answerBytes(resp))
		if err := t.recordUsage(req.Model, u, "compaction", usageUncounted); err != nil {
			return "", err
		}
	}
	if err != nil {
		return "", err
	}
	if resp == nil || strings.TrimSpace(resp.Text) == "" {
		return "", errors.New("the model answered with an empty summary")
	}
	summary := strings.TrimSpace(resp.Text)
	if most := int(float64(summaryTokens) * 2 * bytesPerToken); len(summary) > most {
		summary = cutResult(summary, most) // a summary that ignored its bound
	}
	return summary, nil
}

// Bounds of one message in a transcript and a digest.
const (
	transcriptText   = 8 << 10
	transcriptResult = 2 << 10
	digestText       = 1 << 10
	digestResult     = 300
	digestArgs       = 200
)

// transcript renders messages as the text a model summarizes, at most
// limit bytes: each message bounded, the oldest left out first (an earlier
// summary, which opens History, is kept).
func transcript(ms []provider.Message, limit int) string {
	return render(ms, limit, transcriptText, transcriptResult, 2000)
}

// digest is the fallback summary: the older messages, each cut short,
// tool results most, in at most limit bytes (the most recent kept first).
func digest(ms []provider.Message, limit int) string {
	return "Pixir's digest of the earlier conversation (the model did not summarize it): each message is cut short, tool results most.\n\n" +
		render(ms, limit, digestText, digestResult, digestArgs)
}

func render(ms []provider.Message, limit, textLimit, resultLimit, argsLimit int) string {
	lines := make([]string, len(ms))
	for i, m := range ms {
		switch m.Role {
		case provider.RoleUser:
			lines[i] = "User: " + clip(m.Text, textLimit)
		case provider.RoleAssistant:
			var b strings.Builder
			b.WriteString("Assistant: " + clip(m.Text, textLimit))
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "\n  called %s %s", tc.Name, clip(string(tc.Arguments), argsLimit))
			}
			lines[i] = b.String()
		case provider.RoleTool:
			lines[i] = "Result of " + m.ToolName + ": " + clip(m.Text, resultLimit)
		}
	}
	// An earlier summary opens History: keep it, then the most recent
	// lines that fit.
	first := 0
	if len(ms) > 0 && strings.HasPrefix(ms[0].Text, summaryPrefix) {
		first = 1
	}
	size := 0
	if first == 1 {
		size = len(lines[0])
	}
	from := len(lines)
	for from > first && size+len(lines[from-1])+2 <= limit {
		from--
		size += len(lines[from]) + 2
	}
	var out []string
	if first == 1 {
		out = append(out, clip(lines[0], max(limit/2, 256)))
	}
	if left := from - first; left > 0 {
		out = append(out, fmt.Sprintf("[… %d earlier messages left out …]", left))
	}
	out = append(out, lines[from:]...)
	return strings.Join(out, "\n\n")
}

// clip cuts s to about n bytes, on a rune boundary, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… [%d bytes more]", strings.ToValidUTF8(s[:n], ""), len(s)-n)
}
