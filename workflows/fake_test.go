package workflows

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
)

// childPlan says how a fake child behaves: how long it runs on the
// simulated clock, how it ends, and what it reports through its
// report_checkpoint tool before ending.
type childPlan struct {
	dur     int64
	status  tools.SubagentStatus // subagent status at the end; "" is completed
	summary string
	report  string // report_checkpoint arguments (JSON); "" reports nothing
	hang    bool   // never ends by itself (until Stop)
	changes *tools.FileChanges
	// violation: the child wrote outside its write set (the runtime's
	// check after the fact), so the run ends failed with it.
	violation *tools.WriteSetViolation
	// spend is the tokens its model calls spend, charged to the run's
	// account when it ends.
	spend int64
}

// simRuntime plays the runtime's ports (Agents, Children, Evidence) on a
// simulated clock, to drive the real Run deterministically. Run calls ShowPlan once after reacting to each
// event; the fake takes that as "the runner is waiting" and delivers the
// next child end: the earliest on the simulated clock, ties by start
// order. Simultaneous ends are thus seen one at a time, as in real life.
type simRuntime struct {
	plan func(step string) childPlan

	mu      sync.Mutex
	now     int64
	seq     int
	live    []*simChild
	starts  map[string]int64 // step id -> simulated start
	ends    map[string]int64
	order   []string // step ids in start order
	events  []WorkflowEvent
	plans   [][]tools.PlanEntry
	prompts map[string]string
	reqs    map[string]StepRequest
	stopped []string
	// onStart, if set, runs at each start (for latency probes).
	onStart func(step string)
	// session, if set, is charged what every child spends too, as a
	// session's budget is.
	session *budget.Account
}

type simChild struct {
	id, step string
	seq      int
	end      int64
	plan     childPlan
	req      StepRequest
	start    int64
	// lastReport is what its report_checkpoint call answered.
	lastReport tools.Result
}

func newSim(plan func(step string) childPlan) *simRuntime {
	return &simRuntime{plan: plan, starts: map[string]int64{}, ends: map[string]int64{}, prompts: map[string]string{}, reqs: map[string]StepRequest{}}
}

// ports are the fake's ports, for Prepare.
func (s *simRuntime) ports() Ports { return Ports{Agents: s, Children: s, Evidence: s} }

func (s *simRuntime) CheckSpawn(req tools.SpawnRequest) error {
	if req.Agent == "nobody" {
		return &tools.Failure{Kind: tools.ErrNotFound, Message: `there is no agent named "nobody"; use one of: default`}
	}
	return nil
}

func (s *simRuntime) Start(_ context.Context, req StepRequest) (tools.SubagentView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := req.Account.Exhausted(); err != nil {
		return tools.SubagentView{}, err // as the runtime refuses it
	}
	if s.onStart != nil {
		s.onStart(req.Name)
	}
	p := s.plan(req.Name)
	s.seq++
	c := &simChild{id: fmt.Sprintf("sa-%s", req.Name), step: req.Name, seq: s.seq, end: s.now + p.dur, plan: p, req: req, start: s.now}
	s.live = append(s.live, c)
	s.starts[req.Name] = s.now
	s.order = append(s.order, req.Name)
	s.prompts[req.Name] = req.Task
	s.reqs[req.Name] = req
	if req.Scheduled != nil { // as the runtime writes it, with the queuing
		ev := req.Scheduled.Event
		ev.SubagentID = c.id
		s.events = append(s.events, ev)
	}
	return tools.SubagentView{ID: c.id, Agent: agentOrDefault(req.Agent), Status: tools.SubagentQueued}, nil
}

func (s *simRuntime) Stop(id string) {
	s.mu.Lock()
	for k, c := range s.live {
		if c.id == id {
			s.live = append(s.live[:k], s.live[k+1:]...)
			s.stopped = append(s.stopped, c.step)
			s.mu.Unlock()
			c.req.Ended <- s.view(c, tools.SubagentCancelled, &tools.Failure{Kind: tools.ErrCancelled, Message: "the subagent was cancelled"})
			return
		}
	}
	s.mu.Unlock()
}

func (s *simRuntime) Record(ev WorkflowEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return nil
}

func (s *simRuntime) ShowPlan(entries []tools.PlanEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plans = append(s.plans, entries)
}

// waiting is Run's "I am about to wait": deliver the next ends, every
// child that ends at the earliest simulated time, in start order.
func (s *simRuntime) waiting() {
	s.mu.Lock()
	var batch []*simChild
	for _, c := range s.live {
		switch {
		case c.plan.hang:
		case len(batch) == 0 || c.end < batch[0].end:
			batch = []*simChild{c}
		case c.end == batch[0].end:
			batch = append(batch, c)
		}
	}
	if len(batch) == 0 {
		s.mu.Unlock()
		return
	}
	sort.Slice(batch, func(i, j int) bool { return batch[i].seq < batch[j].seq })
	s.now = batch[0].end
	s.live = slices.DeleteFunc(s.live, func(c *simChild) bool { return slices.Contains(batch, c) })
	for _, c := range batch {
		s.ends[c.step] = s.now
	}
	s.mu.Unlock()
	for _, c := range batch {
		s.end(c)
	}
}

// end runs a child's report_checkpoint call, if it makes one, and ends it.
func (s *simRuntime) end(c *simChild) {
	if c.plan.report != "" {
		for _, t := range c.req.Tools {
			c.lastReport = t.Run(context.Background(), tools.Env{}, []byte(c.plan.report))
		}
	}
	status := c.plan.status
	var f *tools.Failure
	switch status {
	case "":
		status = tools.SubagentCompleted
	case tools.SubagentTimedOut:
		f = &tools.Failure{Kind: tools.ErrTimeout, Message: "the subagent did not finish within its time limit"}
	case tools.SubagentFailed:
		f = &tools.Failure{Kind: tools.ErrProviderError, Message: "the provider failed"}
	}
	if c.plan.spend > 0 {
		c.req.Account.Charge(budget.Usage{InputTokens: c.plan.spend, ModelCalls: 1})
		if s.session != nil {
			s.session.Charge(budget.Usage{InputTokens: c.plan.spend, ModelCalls: 1})
		}
	}
	c.req.Ended <- s.view(c, status, f)
}

func (s *simRuntime) view(c *simChild, status tools.SubagentStatus, f *tools.Failure) tools.SubagentView {
	summary := c.plan.summary
	if summary == "" {
		summary = c.step + " done"
	}
	return tools.SubagentView{ID: c.id, Agent: agentOrDefault(c.req.Agent), Status: status, Summary: summary,
		Error: f, ChildSessionID: "s-" + c.step, ElapsedMS: c.end - c.start, WorkspaceMode: c.req.WorkspaceMode,
		Workspace: "/snap/" + c.step, Changes: c.plan.changes, WriteSetViolation: c.plan.violation, Usage: c.usage()}
}

func (c *simChild) usage() *budget.Usage {
	if c.plan.spend == 0 {
		return nil
	}
	return &budget.Usage{InputTokens: c.plan.spend, ModelCalls: 1}
}

// startOrder is the step ids by simulated start time, then start order.
func (s *simRuntime) startTimes() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for k, v := range s.starts {
		out[k] = v
	}
	return out
}

func (s *simRuntime) kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		out = append(out, e.Kind+":"+e.StepID)
	}
	return out
}

// byStart groups step ids by simulated start time.
func (s *simRuntime) byStart() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := map[int64][]string{}
	var times []int64
	for _, id := range s.order {
		t := s.starts[id]
		if _, ok := at[t]; !ok {
			times = append(times, t)
		}
		at[t] = append(at[t], id)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var out [][]string
	for _, t := range times {
		out = append(out, at[t])
	}
	return out
}

// fixedClock is a Now that never moves, so ElapsedMS is 0 in outcomes.
func fixedClock() func() time.Time {
	t := time.Unix(1_800_000_000, 0)
	return func() time.Time { return t }
}

func (s *simRuntime) WorkflowEvents() ([]WorkflowEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WorkflowEvent(nil), s.events...), nil
}
