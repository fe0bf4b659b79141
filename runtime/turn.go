package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// Observer sees every event of a turn as it happens, in order, on the turn's
// goroutine. It must not block for long: the model stream waits for it.
type Observer func(Event)

// PermissionRequest asks whoever drives the session whether a tool call may
// run.
type PermissionRequest struct {
	SessionID string
	// SubagentID is set when a Subagent asks: SessionID is then its
	// top-level ancestor's, the session the client knows.
	SubagentID string
	ToolCallID string
	Tool       string
	Title      string
	Kind       tools.Kind
	Arguments  json.RawMessage
	Locations  []tools.Location
	// Note is what the person asked should also know (tools.Presentation).
	Note string
	// Command is the shell command the call would run; Diffs what it
	// would change (its dry run; a merge's files): what the person is
	// asked to allow.
	Command string
	Diffs   []tools.Diff
	// ChildSessionID is set when a Subagent asks: its own session, where
	// ToolCallID is its call (SessionID is then its parent's).
	ChildSessionID string
}

// PermissionOutcome is the answer to a PermissionRequest.
type PermissionOutcome string

const (
	AllowOnce   PermissionOutcome = "allow_once"
	AllowAlways PermissionOutcome = "allow_always"
	RejectOnce  PermissionOutcome = "reject_once"
	// PermissionCancelled means the question was withdrawn: the turn is
	// being cancelled.
	PermissionCancelled PermissionOutcome = "cancelled"
)

// Asker is how a session asks for permission in ask mode (the ACP client's
// session/request_permission).
type Asker interface {
	AskPermission(ctx context.Context, req PermissionRequest) (PermissionOutcome, error)
}

// NoOneToAsk is an Asker's error when no one can answer (pixir run in ask
// mode without a terminal): the change is denied by the mode, not by a
// user, and Reason tells the model so and how the user can allow it.
type NoOneToAsk struct{ Reason string }

func (e *NoOneToAsk) Error() string { return e.Reason }

// Prompt is what the user sent.
type Prompt struct {
	// Text is what the model reads.
	Text string
	// TextJSON, when set, is Text as one JSON string (quotes included) in
	// pieces, to be written one after the other: a client's large texts
	// stay the slices of its message they came in, so that the Log
	// records a prompt of megabytes without encoding it again or copying
	// it. It must decode to Text.
	TextJSON [][]byte
	// Content is the client's original content, kept for replay.
	Content json.RawMessage
}

// TurnOptions connect a turn to whoever drives it.
type TurnOptions struct {
	Observe Observer
	Ask     Asker // nil: ask mode denies, with a reason saying so
	// Files, when set, replaces local file access (the editor's buffers).
	Files tools.Files
	// Terminals, when set, runs commands in the editor's terminals.
	Terminals tools.Terminals
}

// Prompt runs one turn: model, tool calls, tool results, model… until the
// model answers without tool calls, the model-call limit is reached, or ctx
// or Cancel stops it. A provider failure ends the turn with end_turn and a
// turn_failed event; only faults of the runtime itself are returned as
// errors. When the Log cannot be written (a full disk) the turn stops at
// once with a *LogWriteError: the observer is shown why, and every tool
// call it was shown ends, failed; nothing half-written stays in the Log,
// and the next turn first records those calls as interrupted.
func (s *Session) Prompt(ctx context.Context, p Prompt, opt TurnOptions) (StopReason, error) {
	s.mu.Lock()
	for s.turnCancel != nil && s.turnCancelled && !s.closed {
		// A prompt sent right after a cancel (clients send both at once)
		// runs once the cancelled turn has ended.
		ended := s.turnDone
		s.mu.Unlock()
		select {
		case <-ended:
		case <-ctx.Done():
			return StopCancelled, nil
		}
		s.mu.Lock()
	}
	if s.closed {
		s.mu.Unlock()
		return "", ErrSessionClosed
	}
	if s.turnCancel != nil {
		s.mu.Unlock()
		return "", ErrBusy
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.turnCancel, s.turnDone, s.turnCancelled = cancel, done, false
	if s.meta.Title == "" {
		s.meta.Title = titleFrom(p.Text)
	}
	s.mu.Unlock()
	defer func() {
		cancel()
		s.mu.Lock()
		s.turnCancel, s.turnDone = nil, nil
		s.mu.Unlock()
		close(done)
	}()

	t := &turn{s: s, ctx: ctx, opt: opt}
	if err := s.reattachLog(); err != nil {
		t.abandon(err)
		return StopEndTurn, err
	}
	s.mu.Lock()
	s.interrupted = append(s.interrupted, s.pending...)
	s.pending = nil
	s.mu.Unlock()
	if err := s.recordInterrupted(opt.Observe); err != nil {
		t.abandon(err)
		return StopEndTurn, err
	}
	if err := s.recordDetached(); err != nil {
		t.abandon(err)
		return StopEndTurn, err
	}
	stop, err := t.run(p)
	if errors.Is(err, ErrLogWrite) {
		t.abandon(err)
		stop = StopEndTurn
	}
	if err == nil {
		stop = s.turnEnd(ctx, stop)
		err = t.recordStop(stop)
		if err != nil {
			t.abandon(err)
			stop = StopEndTurn
		}
	}
	if metaErr := s.saveMeta(); metaErr != nil && err == nil {
		s.rt.log.Warn("saving session metadata", "session", s.ID(), "err", metaErr)
	}
	return stop, err
}

// recordStop records why a turn that did not end end_turn stopped (an
// assistant_message holding only the stop reason): a turn cancelled
// between or during model calls, or stopped at a limit, left no final
// answer in the Log, and inspect could only guess why.
func (t *turn) recordStop(stop StopReason) error {
	if stop == StopEndTurn || stop == t.stopRecorded {
		return nil
	}
	return t.emit(EventAssistantMessage, AssistantMessageData{StopReason: stop})
}

// turnEnd is the reason a turn that ran to its end without a fault
// answers with: cancelled when it was told to stop (session/cancel, its
// context) before it returned, whatever it decided before the cancel
// came (a cancel that raced its last answer, a provider failure or a
// spent budget): ACP answers a cancelled prompt "cancelled". Never
// empty: a reason is required on the wire.
func (s *Session) turnEnd(ctx context.Context, decided StopReason) StopReason {
	s.mu.Lock()
	cancelled := s.turnCancelled
	s.mu.Unlock()
	switch {
	case cancelled || ctx.Err() != nil:
		return StopCancelled
	case decided == "":
		s.rt.log.Error("a turn ended without a stop reason; answering end_turn", "session", s.ID())
		return StopEndTurn
	}
	return decided
}

type turn struct {
	s   *Session
	ctx context.Context
	opt TurnOptions
	// reg is the tools the last model call was offered: its tool calls run
	// against them, even if an MCP server has changed its tools since.
	reg *tools.Registry
	// requestBytes is what the last request weighed, to calibrate the
	// estimate of tokens with what the provider counted.
	requestBytes int
	// stopRecorded is the stop reason the Log already holds for the turn
	// (on the cut-off message of a cancel while the model streamed).
	stopRecorded StopReason
}

// cancelled reports whether the turn was told to stop.
func (t *turn) cancelled() bool { return t.ctx.Err() != nil }

func (t *turn) emit(typ EventType, data any) error {
	if err := t.s.emit(t.opt.Observe, typ, data); err != nil {
		return err
	}
	if typ == EventToolCall {
		t.s.announced(data.(ToolCallData).ToolCallID)
	}
	return nil
}

// abandon ends a turn the Log cannot record: the observer sees every call
// it was shown end, failed, and why the turn stopped. None of this reaches
// the Log (it cannot be written); the calls stay pending, so the next turn
// records them as interrupted before anything else.
func (t *turn) abandon(cause error) {
	obs := t.opt.Observe
	if obs == nil {
		return
	}
	show := func(typ EventType, data any) {
		raw, err := json.Marshal(data)
		if err == nil {
			obs(Event{ID: uuid.Must(uuid.NewV7()).String(), SessionID: t.s.ID(), TS: time.Now().UTC(), Type: typ, Data: raw})
		}
	}
	t.s.mu.Lock()
	open := slices.Clone(t.s.pending)
	t.s.mu.Unlock()
	for _, c := range open {
		if c.announced {
			show(EventToolResult, ToolResultData{ToolCallID: c.call.ID, Name: c.call.Name,
				Result: tools.Fail(tools.ErrInternal, "not finished: the turn stopped because the session's Log could not be written")})
		}
	}
	show(EventTurnFailed, TurnFailedData{Kind: tools.ErrInternal, Message: cause.Error()})
}

func (t *turn) run(p Prompt) (StopReason, error) {
	s := t.s
	if err := t.emit(EventUserMessage, UserMessageData{Text: p.Text, Content: p.Content, textJSON: p.TextJSON}); err != nil {
		return "", err
	}
	s.appendHistory(provider.Message{Role: provider.RoleUser, Text: p.Text})
	s.waitMCP(t.ctx)

	limit := s.rt.cfg.MaxTurnRequests
	for call := 1; ; call++ {
		if t.cancelled() {
			return StopCancelled, nil
		}
		if call > limit {
			return StopMaxTurnRequests, nil
		}
		if err := t.foldUnseen(); err != nil {
			return "", err
		}
		var specs []provider.ToolSpec
		t.reg, specs = s.toolbox()
		if err := t.compactIfNeeded(specs); err != nil {
			return "", err
		}
		resp, streamed, err := t.generateFitting(specs)
		if errors.Is(err, ErrLogWrite) {
			return "", err
		}
		if err != nil {
			if cut := streamed.text.Len() + streamed.reasoning.Len() + streamed.toolCalls; (resp == nil || resp.Usage == nil) && cut > 0 {
				// An answer cut off mid-stream (cancelled, a broken
				// connection, an error event) reports no usage, but the
				// server generated, and bills, what streamed (tool calls'
				// fragments included): estimated, so that budgets count
				// it. Before the cut message, which stays the turn's last
				// word on why it stopped.
				if err := t.recordUsage(s.Model(), s.estimatedUsage(t.requestBytes, cut), "", usageCut); err != nil {
					return "", err
				}
			}
			// Keep what the user already saw, so a replay shows it too.
			if streamed.text.Len() > 0 || streamed.reasoning.Len() > 0 {
				partial := &provider.ModelResponse{Text: streamed.text.String(), Reasoning: streamed.reasoning.String()}
				if t.cancelled() {
					// Why the turn stopped, on the message it cut.
					t.stopRecorded = StopCancelled
				}
				if err := t.recordResponse(partial, true); err != nil {
					return "", err
				}
			}
			// An answer the server completed and counted but that cannot
			// be used (a tool call without a tool's name) still cost what
			// it counted.
			if resp != nil && resp.Usage != nil {
				if err := t.recordUsage(s.Model(), *resp.Usage, "", usageCounted); err != nil {
					return "", err
				}
			}
			if t.cancelled() {
				return StopCancelled, nil
			}
			kind := tools.ErrProviderError
			var f *tools.Failure
			if errors.As(err, &f) {
				kind = f.Kind
			} else if budget.IsExhausted(err) {
				kind = tools.ErrBudgetExhausted
			}
			if err := t.emit(EventTurnFailed, TurnFailedData{Kind: kind, Message: err.Error()}); err != nil {
				return "", err
			}
			if kind == tools.ErrBudgetExhausted {
				return StopMaxTokens, nil
			}
			return StopEndTurn, nil
		}
		if resp.Truncated {
			if i := slices.IndexFunc(resp.ToolCalls, func(tc provider.ToolCall) bool { return tc.Unparsed != "" }); i >= 0 {
				return t.cutOffCall(resp, resp.ToolCalls[i].Name)
			}
		}
		// A complete response is recorded even when a cancel raced it: the
		// model's tool calls must each get an answer in History.
		if err := t.recordResponse(resp, false); err != nil {
			return "", err
		}
		if len(resp.ToolCalls) == 0 {
			if t.cancelled() {
				return StopCancelled, nil
			}
			if resp.Truncated {
				return t.cutOff("")
			}
			return StopEndTurn, nil
		}
		for i, tc := range resp.ToolCalls {
			if t.cancelled() {
				// The model expects an answer to every call it made.
				if err := t.skipCalls(resp.ToolCalls[i:]); err != nil {
					return "", err
				}
				return StopCancelled, nil
			}
			if err := t.runTool(tc); err != nil {
				return "", err
			}
		}
	}
}

// cutOff ends a turn whose last answer the token limit of one answer cut
// off: the user is told (a notice, kept in the Log) and the turn ends
// max_tokens, not as if the model had finished. call names the tool whose
// call the limit cut (not run), if it cut one.
func (t *turn) cutOff(call string) (StopReason, error) {
	what := "The model stopped at the most tokens one answer may have, before it finished; what arrived is kept. "
	if call != "" {
		what = fmt.Sprintf("The model stopped at the most tokens one answer may have in the middle of its call of %q, so none of the answer's tool calls ran; its text is kept. ", call)
	}
	err := t.emit(EventNotice, NoticeData{Source: "provider", Severity: "warning",
		Title:  "The answer was cut off at the model's token limit",
		Detail: what + "To let it finish, raise max_tokens in config.toml (or the server's own limit), or ask for a shorter answer."})
	if err != nil {
		return "", err
	}
	return StopMaxTokens, nil
}

// cutOffCall ends a turn whose last answer the token limit cut off in the
// middle of a tool call (its arguments are not JSON: the rest never came).
// That is no call to answer invalid_args and go on: none of the answer's
// calls runs, its text is kept as a cut-off answer (charged what the
// server counted), and the turn ends max_tokens as for a cut-off text.
func (t *turn) cutOffCall(resp *provider.ModelResponse, call string) (StopReason, error) {
	if resp.Text != "" || resp.Reasoning != "" {
		if err := t.recordResponse(&provider.ModelResponse{Text: resp.Text, Reasoning: resp.Reasoning}, true); err != nil {
			return "", err
		}
	}
	if resp.Usage != nil {
		if err := t.recordUsage(t.s.Model(), *resp.Usage, "", usageCounted); err != nil {
			return "", err
		}
	}
	return t.cutOff(call)
}

// foldUnseen tells the model, before its next call, how the children it
// did not wait for ended: their compact summaries, as one message, recorded
// so that History folded from the Log holds it too.
func (t *turn) foldUnseen() error {
	views := t.s.rt.subagents.unseenEnds(t.s.ID())
	if len(views) == 0 {
		return nil
	}
	d := summariesOf(views)
	if err := t.emit(EventSubagentSummaries, d); err != nil {
		return err
	}
	t.s.appendHistory(provider.Message{Role: provider.RoleUser, Text: d.Text, FromPixir: true})
	return nil
}

// streamedSoFar is what the user saw of an answer, kept in case the answer
// fails. Builders, not strings: each delta is appended once, so a long
// answer costs the same per delta at its end as at its start.
// toolCalls counts the bytes of tool calls' fragments, never shown.
type streamedSoFar struct {
	text, reasoning strings.Builder
	toolCalls       int
}

// generate makes one model call, streaming deltas to the observer.
// specs are the tools offered.
func (t *turn) generate(specs []provider.ToolSpec) (*provider.ModelResponse, *streamedSoFar, error) {
	s := t.s
	so := &streamedSoFar{}
	if err := s.exhausted(); err != nil {
		return nil, so, err
	}
	t.requestBytes = s.requestBytes(specs)
	req := provider.ModelRequest{
		Model:           s.Model(),
		System:          s.systemPrompt(),
		Messages:        s.historyCopy(),
		Tools:           specs,
		ReasoningEffort: s.reasoningEffort(),
	}
	var emitErr error
	resp, err := s.rt.cfg.Provider.Generate(t.ctx, req, func(d provider.Delta) {
		if d.Text == "" || emitErr != nil {
			return
		}
		if d.Kind == provider.DeltaToolCall {
			so.toolCalls += len(d.Text)
			return
		}
		typ := EventTextDelta
		if d.Kind == provider.DeltaReasoning {
			typ = EventReasoningDelta
			so.reasoning.WriteString(d.Text)
		} else {
			so.text.WriteString(d.Text)
		}
		emitErr = t.emit(typ, TextDeltaData{Text: d.Text})
	})
	if emitErr != nil {
		return nil, so, emitErr
	}
	if err == nil && resp == nil {
		err = errors.New("the provider returned no response")
	}
	if err == nil {
		markUnparsed(resp.ToolCalls)
	}
	return resp, so, err
}

// markUnparsed moves the arguments of each call that are not JSON text
// (a model with unreliable tool calling; a reply cut off mid-call; the
// scripted provider's arguments_json sent verbatim) to Unparsed, and sets
// {} in their place: the call can be recorded (json.RawMessage refuses
// text that is not JSON) and sent back in later requests, and it is
// answered invalid_args, so the model reads why and can call again, as
// Codex, Claude Code and Gemini CLI do.
func markUnparsed(calls []provider.ToolCall) {
	for i := range calls {
		tc := &calls[i]
		if len(tc.Arguments) == 0 || json.Valid(tc.Arguments) {
			continue
		}
		tc.Unparsed, tc.Arguments = string(tc.Arguments), json.RawMessage(`{}`)
	}
}

// shownArguments is what a tool_call event shows of a call's arguments:
// the text that came, as a JSON string, when it was not JSON (History sends
// {} in its place).
func shownArguments(tc provider.ToolCall) json.RawMessage {
	if tc.Unparsed == "" {
		return tc.Arguments
	}
	args, _ := json.Marshal(tc.Unparsed)
	return args
}

// unparsedResult is the answer to a call whose arguments were not JSON.
func unparsedResult(tc provider.ToolCall) tools.Result {
	var v any
	cause := json.Unmarshal([]byte(tc.Unparsed), &v)
	if cause == nil {
		cause = errors.New("more than one JSON value")
	}
	return tools.Fail(tools.ErrInvalidArgs, "the arguments of this call of %q are not valid JSON (%v), so it was not run: %s; call it again with its arguments as one JSON object",
		tc.Name, cause, tools.Truncate(tc.Unparsed, 200))
}

func (t *turn) recordResponse(resp *provider.ModelResponse, partial bool) error {
	s := t.s
	s.uniqueCallIDs(resp.ToolCalls)
	// The answer's events (its reasoning, its message, its usage) are
	// produced together, so they are one append to the Log: one write.
	group := make([]eventOf, 0, 3)
	if resp.Reasoning != "" {
		group = append(group, eventOf{EventReasoning, ReasoningData{Text: resp.Reasoning}})
	}
	group = append(group, eventOf{EventAssistantMessage, AssistantMessageData{Text: resp.Text, ToolCalls: resp.ToolCalls, Partial: partial, StopReason: t.stopRecorded}})
	var call budget.Usage
	u, how := resp.Usage, usageCounted
	if u == nil && !partial {
		// A whole answer the server did not count still cost tokens.
		est := s.estimatedUsage(t.requestBytes, answerBytes(resp))
		u, how = &est, usageUncounted
	}
	charged := u != nil && !partial
	if charged {
		var usage []eventOf
		usage, call = t.usageEvents(s.Model(), *u, "", how, t.requestBytes)
		group = append(group, usage...)
	}
	if err := s.emitGroup(t.opt.Observe, group); err != nil {
		return err
	}
	s.appendHistory(provider.Message{Role: provider.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
	if charged {
		if how == usageCounted {
			s.calibrate(t.requestBytes, u.InputTokens)
		}
		s.charge(call, s.rt.contextWindow(s.Model(), u.ContextWindow))
	}
	return nil
}

// estimatedUsage is what a model call the server reported no usage for
// (an OpenAI-compatible server that ignores stream_options.include_usage,
// a gateway that drops the last chunk) is counted at: its request of
// requestBytes and its answer of answer bytes, in tokens as the session
// estimates them. Counting nothing would leave every budget open.
func (s *Session) estimatedUsage(requestBytes, answer int) provider.Usage {
	return provider.Usage{InputTokens: int(max(s.tokens(requestBytes), 1)), OutputTokens: int(max(s.tokens(answer), 1))}
}

// answerBytes is the size of an answer: its text, reasoning and calls.
func answerBytes(resp *provider.ModelResponse) int {
	n := len(resp.Text) + len(resp.Reasoning)
	for _, tc := range resp.ToolCalls {
		n += len(tc.Name) + len(tc.Arguments) + len(tc.Unparsed)
	}
	return n
}

// tellEstimate is the notice, once per session, that the model server
// reports no usage and Pixir estimates it; false once told.
func (s *Session) tellEstimate() (NoticeData, bool) {
	s.mu.Lock()
	told := s.estimateTold
	s.estimateTold = true
	s.mu.Unlock()
	if told {
		return NoticeData{}, false
	}
	return NoticeData{Source: "provider", Severity: "warning",
		Title: "The model server reported no token usage",
		Detail: "Its answers do not say how many tokens they used (a server that ignores stream_options.include_usage, or a proxy that drops the last chunk), " +
			"so Pixir estimates each call from the sizes of its request and answer (about 4 bytes a token): the usage shown and the budgets count estimates, " +
			"marked estimated in the Log's provider_usage events."}, true
}

// usageEvent is the provider_usage event of a model call (with its cost,
// where priced), and the cost to charge to the session's budgets.
func (t *turn) usageEvent(model string, u provider.Usage, purpose string) (ProviderUsageData, budget.Usage) {
	s := t.s
	call := s.rt.callUsage(model, u)
	return ProviderUsageData{Provider: s.rt.cfg.Provider.Name(), Model: model, Usage: u,
		Cost: call.Cost, Currency: call.Currency, Purpose: purpose}, call
}

// usageKind says where a model call's usage comes from.
type usageKind int

const (
	// usageCounted: the server counted it.
	usageCounted usageKind = iota
	// usageUncounted: the server answered whole and counted nothing, so
	// Pixir estimates it, and tells the session so once.
	usageUncounted
	// usageCut: the answer was cut off (cancelled, a broken connection,
	// an error event) before the server's count, which comes at its end:
	// estimated, and nothing is said of the server.
	usageCut
)

// usageEvents are the events of a model call's usage: its provider_usage,
// with requestBytes when the server counted it; when Pixir estimated it,
// marked so, without request_bytes (an estimate must not calibrate
// estimates), after the once-per-session notice that the server reports
// no usage when it answered whole without it. And the cost to charge.
func (t *turn) usageEvents(model string, u provider.Usage, purpose string, how usageKind, requestBytes int) ([]eventOf, budget.Usage) {
	usage, call := t.usageEvent(model, u, purpose)
	group := make([]eventOf, 0, 2)
	if how == usageCounted {
		usage.RequestBytes = requestBytes
		return append(group, eventOf{EventProviderUsage, usage}), call
	}
	usage.Estimated = true
	if how == usageUncounted {
		if notice, ok := t.s.tellEstimate(); ok {
			group = append(group, eventOf{EventNotice, notice})
		}
	}
	return append(group, eventOf{EventProviderUsage, usage}), call
}

// recordUsage records a model call's usage (with its cost, where priced;
// see usageEvents for estimated) and charges it to the session's budgets.
func (t *turn) recordUsage(model string, u provider.Usage, purpose string, how usageKind) error {
	s := t.s
	group, call := t.usageEvents(model, u, purpose, how, 0)
	if err := s.emitGroup(t.opt.Observe, group); err != nil {
		return err
	}
	s.charge(call, s.rt.contextWindow(model, u.ContextWindow))
	return nil
}

// runTool announces, authorizes, runs and records one tool call.
func (t *turn) runTool(tc provider.ToolCall) error {
	s := t.s
	tool, known := t.tool(tc)
	pres := tools.Presentation{Title: tc.Name, Kind: tools.KindOther}
	var posture tools.Posture
	if known && tc.Unparsed == "" {
		pres = tool.Describe(tc.Arguments)
		posture = tool.Posture()
	}
	if err := t.emit(EventToolCall, ToolCallData{
		ToolCallID: tc.ID, Name: tc.Name, Arguments: shownArguments(tc),
		Title: pres.Title, Kind: pres.Kind, Posture: posture, Locations: pres.Locations,
	}); err != nil {
		return err
	}
	start := time.Now()
	var result tools.Result
	switch {
	case !known:
		result = t.registry().Unknown(tc.Name)
	case tc.Unparsed != "":
		result = unparsedResult(tc)
	default:
		dry := posture == tools.PostureMutation && dryRunArgs(tc.Arguments)
		allowed, denial, err := true, tools.Result{}, error(nil)
		if dry {
			// A dry run changes nothing, so every mode allows it unasked.
			err = t.emit(EventPermissionDecision, PermissionDecisionData{
				ToolCallID: tc.ID, Tool: tc.Name, Mode: s.heldMode(), Decision: "allowed", Source: "dry_run",
			})
		} else {
			allowed, denial, err = t.authorize(tc, tool, pres)
		}
		if err != nil {
			return err
		}
		if !allowed {
			result = denial
			break
		}
		if err := t.emit(EventStatus, StatusData{ToolCallID: tc.ID, Status: "in_progress"}); err != nil {
			return err
		}
		if dry {
			result = tool.DryRun(t.ctx, t.env(tc, true), tc.Arguments)
		} else {
			result = tool.Run(t.ctx, t.env(tc, true), tc.Arguments)
		}
	}
	return t.recordResult(tc, result, time.Since(start))
}

// dryRunArgs reports whether args are an object whose top-level dry_run or
// validate_only is the boolean true. The turn then calls DryRun, never Run,
// so a tool that does not know the flag cannot be tricked into a real run.
func dryRunArgs(args json.RawMessage) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(args, &top) != nil {
		return false
	}
	return string(top["dry_run"]) == "true" || string(top["validate_only"]) == "true"
}

// tool is the tool call tc names: the session's, except run_workflow,
// which is made for this call, bound to the workflow ports of this session,
// call and turn.
func (t *turn) tool(tc provider.ToolCall) (tools.Tool, bool) {
	tool, known := t.registry().Get(tc.Name)
	if known && tc.Name == workflows.RunWorkflowName && t.s.rt.cfg.Workflows {
		tool = workflows.RunWorkflowTool(t.binding(tc).workflowPorts())
	}
	return tool, known
}

// registry is the tools the last model call was offered (an MCP server may
// have changed its own since), or the session's before any.
func (t *turn) registry() *tools.Registry {
	if t.reg != nil {
		return t.reg
	}
	return t.s.registry()
}

// binding is the Subagents Manager bound to this session, call and turn.
func (t *turn) binding(tc provider.ToolCall) binding {
	return binding{m: t.s.rt.subagents, parent: t.s, toolCallID: tc.ID, ask: t.opt.Ask, files: t.opt.Files}
}

// env is what a tool call runs against; with notice, it carries the
// session's sandbox notice the first time one is due (a preview for a
// permission question leaves it for the call itself).
func (t *turn) env(tc provider.ToolCall, notice bool) tools.Env {
	files := t.opt.Files
	if files == nil {
		files = t.s.workspace.Files()
	}
	policy := t.s.commandPolicy()
	env := tools.Env{
		SessionID: t.s.ID(), ToolCallID: tc.ID, Workspace: t.s.workspace,
		Files: files, Terminals: t.opt.Terminals, Subagents: t.binding(tc),
		Sandbox: t.s.rt.cfg.Sandbox, Commands: policy, Seen: t.s,
		Progress: func(message string) {
			// Ephemeral: shown, not kept; a failure to show it is no fault.
			_ = t.emit(EventStatus, ToolProgressData{ToolCallID: tc.ID, Status: "in_progress", Activity: message})
		},
	}
	if notice {
		env.SandboxNotice = t.s.sandboxNotice(policy)
	}
	return env
}

func (t *turn) recordResult(tc provider.ToolCall, result tools.Result, elapsed time.Duration) error {
	result = boundResult(result)
	data := ToolResultData{
		ToolCallID: tc.ID, Name: tc.Name, Result: result, Locations: result.Locations,
		TerminalID: result.TerminalID, Blocks: result.Blocks, ElapsedMS: elapsed.Milliseconds(),
	}
	for _, d := range result.Diffs {
		data.Diffs = append(data.Diffs, DiffData(d))
	}
	data.Seen = result.Seen
	if err := t.emit(EventToolResult, data); err != nil {
		return err
	}
	if result.Seen != nil {
		t.s.noteSeen(*result.Seen)
	}
	if result.Plan != nil {
		if err := t.emit(EventPlan, PlanData{PlanID: AgentPlanID, Entries: result.Plan}); err != nil {
			return err
		}
	}
	t.s.appendHistory(provider.Message{Role: provider.RoleTool, Text: modelText(result), ToolCallID: tc.ID, ToolName: tc.Name})
	return nil
}

// skipCalls answers calls that will not run because the turn was cancelled.
func (t *turn) skipCalls(calls []provider.ToolCall) error {
	for _, tc := range calls {
		res := tools.Fail(tools.ErrCancelled, "not run: the turn was cancelled before this call started")
		if err := t.recordResult(tc, res, 0); err != nil {
			return err
		}
	}
	return nil
}

// authorize applies the permission mode to a call. Reads are always allowed;
// mutations follow the mode, and every decision about one is recorded.
func (t *turn) authorize(tc provider.ToolCall, tool tools.Tool, pres tools.Presentation) (bool, tools.Result, error) {
	s := t.s
	if tool.Posture() != tools.PostureMutation {
		return true, tools.Result{}, nil
	}
	mode := s.heldMode()
	decision := PermissionDecisionData{ToolCallID: tc.ID, Tool: tc.Name, Mode: mode}
	record := func(d, source, option, reason string) error {
		decision.Decision, decision.Source, decision.Option, decision.Reason = d, source, option, reason
		return t.emit(EventPermissionDecision, decision)
	}
	switch mode {
	case ModeReadOnly:
		if _, ok := tool.(tools.Sandboxed); ok {
			if sup := s.rt.sandboxSupport(); sup.Landlock {
				return true, tools.Result{}, record("allowed", "sandbox", "",
					"read_only: the command runs in a read-only sandbox (it may write only its own temporary directory)")
			} else {
				reason := fmt.Sprintf("%s runs commands and the session is in read_only mode, and no kernel sandbox can hold them to read-only here (%s); ask the user to switch the mode to auto or ask",
					tc.Name, sup.LandlockProblem)
				s.noteUnsandboxed(reason)
				return false, tools.Fail(tools.ErrPermissionDenied, "%s", reason), record("denied", "mode", "", reason)
			}
		}
		reason := fmt.Sprintf("%s changes the workspace and the session is in read_only mode; ask the user to switch the mode to auto or ask", tc.Name)
		return false, tools.Fail(tools.ErrPermissionDenied, "%s", reason), record("denied", "mode", "", reason)
	case ModeAsk:
		if s.allowedAlways(tc.Name) {
			return true, tools.Result{}, record("allowed", "remembered", string(AllowAlways), "")
		}
		if c, ok := tool.(tools.ArgumentsChecked); ok {
			// A call its tool would refuse is not put to the user: the
			// model gets the refusal at once, and no decision is made.
			if f := c.CheckArguments(tc.Arguments); f != nil {
				return false, tools.Failed(f), nil
			}
		}
		if t.opt.Ask == nil {
			reason := "the session is in ask mode and there is no client to ask"
			return false, tools.Fail(tools.ErrPermissionDenied, "%s", reason), record("denied", "mode", "", reason)
		}
		req := PermissionRequest{
			SessionID: s.ID(), ToolCallID: tc.ID, Tool: tc.Name, Title: pres.Title,
			Kind: pres.Kind, Arguments: tc.Arguments, Locations: pres.Locations, Note: pres.Note, Command: pres.Command,
		}
		if _, ok := tool.(tools.DiffPreviewed); ok || pres.Kind == tools.KindEdit {
			// Shown in the question: what the call would change, from its
			// dry run, which changes nothing.
			if preview := tool.DryRun(t.ctx, t.env(tc, false), tc.Arguments); len(preview.Diffs) > 0 {
				req.Diffs = preview.Diffs
			}
		}
		outcome, err := t.opt.Ask.AskPermission(t.ctx, req)
		if nobody, ok := errors.AsType[*NoOneToAsk](err); ok && !t.cancelled() {
			return false, tools.Fail(tools.ErrPermissionDenied, "%s", nobody.Reason), record("denied", "mode", "", nobody.Reason)
		}
		if err != nil || t.cancelled() {
			outcome = PermissionCancelled
		}
		switch outcome {
		case AllowOnce:
			return true, tools.Result{}, record("allowed", "user", string(outcome), "")
		case AllowAlways:
			s.rememberAllow(tc.Name)
			return true, tools.Result{}, record("allowed", "user", string(outcome), "")
		case PermissionCancelled:
			reason := "the permission request was cancelled"
			if err != nil && !t.cancelled() {
				reason = "the permission request failed: " + err.Error()
			}
			return false, tools.Fail(tools.ErrCancelled, "%s", reason), record("cancelled", "user", "", reason)
		default:
			reason := fmt.Sprintf("the user rejected this %s call; do not retry it unchanged, ask what they want instead", tc.Name)
			return false, tools.Fail(tools.ErrPermissionDenied, "%s", reason), record("denied", "user", string(outcome), reason)
		}
	default:
		return true, tools.Result{}, record("allowed", "mode", "", "")
	}
}

// reasoningEffort is what this session's model calls ask for: its agent's,
// or else the runtime's.
func (s *Session) reasoningEffort() string {
	if s.effort != "" {
		return s.effort
	}
	return s.rt.cfg.ReasoningEffort
}

// systemPrompt is the session's system prompt (see runtime/prompt), built
// once.
func (s *Session) systemPrompt() string {
	s.promptOnce.Do(func() {
		if s.parent != nil && s.child != nil && s.sharesWorkspace {
			s.prompt = s.parent.childPrompt(s.workspace.Root(), s.projectRoot(), *s.child)
			return
		}
		s.prompt = s.rt.buildPrompt(s.workspace.Root(), s.projectRoot(), s.child).Text
	})
	return s.prompt
}

// appendHistory adds a message to History and keeps track of the calls of
// the last response that have no result yet.
func (s *Session) appendHistory(m provider.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, m)
	s.histBytes += messageBytes(m)
	switch m.Role {
	case provider.RoleAssistant:
		s.pending = s.pending[:0]
		for _, tc := range m.ToolCalls {
			s.pending = append(s.pending, openCall{call: tc})
		}
	case provider.RoleTool:
		s.pending = slices.DeleteFunc(s.pending, func(c openCall) bool { return c.call.ID == m.ToolCallID })
	}
}

// announced notes that a pending call's tool_call event is in the Log.
func (s *Session) announced(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.pending {
		if s.pending[i].call.ID == id {
			s.pending[i].announced = true
		}
	}
}

// historyCopy is History as it is now. Messages are only ever appended, so
// the slice is shared, clipped so that an append by the provider cannot
// reach it: no copy, however long the session.
func (s *Session) historyCopy() []provider.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clip(s.history)
}

func (s *Session) allowedAlways(tool string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allowAlways[tool]
}

// SeenFile implements tools.SeenFiles: what the session's model last saw
// of the file at path.
func (s *Session) SeenFile(path string) (tools.Seen, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.seen[path]
	return seen, ok
}

// noteSeen keeps what a tool result says the model has now seen of a file.
func (s *Session) noteSeen(seen tools.Seen) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]tools.Seen{}
	}
	s.seen[seen.Path] = seen
}

func (s *Session) rememberAllow(tool string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.allowAlways == nil {
		s.allowAlways = map[string]bool{}
	}
	s.allowAlways[tool] = true
}

// uniqueCallIDs renames, in place, the calls whose id the session already
// used: ACP says a tool call id is unique within its session, and some
// providers number their calls afresh each turn. The renamed id is what
// History, the Log and the client all see, so the model's next request
// pairs each result with its call.
func (s *Session) uniqueCallIDs(calls []provider.ToolCall) {
	if len(calls) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.callIDs == nil {
		s.callIDs = map[string]bool{}
	}
	for i := range calls {
		base := calls[i].ID
		if base == "" {
			// A provider that sent no id (a local server's, a proxy's):
			// an editor keeps tool calls by id, and the model's result
			// must name its call.
			base = "pixir-call"
		}
		id := base
		for n := 2; s.callIDs[id]; n++ {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		calls[i].ID = id
		s.callIDs[id] = true
	}
}
