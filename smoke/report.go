// Package smoke holds Pixir's smoke checks of the workflow contract (ADR
// 0012 "Verification", ADR 0014): Workflows runs them offline on an
// embedded scripted model in a throwaway workspace, and Real runs a small
// scenario against a real model provider and keeps the evidence. Each
// check is named, passes or fails, and carries its evidence: ids, Log
// seqs and timestamps, statuses and paths. The CLI (`pixir smoke`) only
// parses flags and prints the reports.
package smoke

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Report modes.
const (
	ModeRun    = "run"
	ModeDryRun = "dry_run"
)

// Check is one named claim of the contract and what shows it.
type Check struct {
	Name string `json:"name"`
	Pass bool   `json:"pass"`
	// Evidence is what the check looked at: ids, seqs, timestamps,
	// statuses, paths.
	Evidence map[string]any `json:"evidence"`
	// Error says what did not hold, for a check that failed.
	Error string `json:"error,omitempty"`
	// About is the claim in words, for the readable report.
	About string `json:"-"`
}

// Report is the outcome of `pixir smoke workflows`.
type Report struct {
	OK        bool    `json:"ok"`
	Mode      string  `json:"mode"`
	Checks    []Check `json:"checks"`
	ElapsedMS int64   `json:"elapsed_ms"`
	// Workspace is the scratch workspace, when it was kept (Options.Keep).
	Workspace string `json:"workspace,omitempty"`
}

// checks collects checks in the order they were made.
type checks struct{ list []Check }

// add records a check: it passes when problems are none; evidence is
// kept either way.
func (c *checks) add(name, about string, evidence map[string]any, problems ...string) {
	if evidence == nil {
		evidence = map[string]any{}
	}
	ck := Check{Name: name, About: about, Pass: len(problems) == 0, Evidence: evidence}
	if !ck.Pass {
		ck.Error = strings.Join(problems, "; ")
	}
	c.list = append(c.list, ck)
}

// allPass reports whether every check passed (and there is one at least).
func allPass(cs []Check) bool {
	for _, c := range cs {
		if !c.Pass {
			return false
		}
	}
	return len(cs) > 0
}

// problems gathers what a check found wrong.
type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// expect records a problem unless ok.
func (p *problems) expect(ok bool, format string, args ...any) {
	if !ok {
		p.addf(format, args...)
	}
}

// WriteJSON prints the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText prints the report for a person: a verdict, then one line per
// check, with the reason of each failure.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	passed := 0
	for _, c := range r.Checks {
		if c.Pass {
			passed++
		}
	}
	mode := ""
	if r.Mode == ModeDryRun {
		mode = ", dry run: validation and plans only, nothing started"
	}
	fmt.Fprintf(&b, "pixir smoke workflows: %s — %d of %d checks pass (%.1f s%s)\n\n", verdict, passed, len(r.Checks), float64(r.ElapsedMS)/1000, mode)
	writeChecks(&b, r.Checks)
	if r.Workspace != "" {
		fmt.Fprintf(&b, "\nworkspace kept at %s\n", r.Workspace)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeChecks writes one line per check, and under a failed one its error.
func writeChecks(b *strings.Builder, cs []Check) {
	for _, c := range cs {
		mark := "ok  "
		if !c.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(b, "  %s %s", mark, c.Name)
		if c.About != "" {
			fmt.Fprintf(b, ": %s", c.About)
		}
		b.WriteString("\n")
		if c.Error != "" {
			fmt.Fprintf(b, "       %s\n", c.Error)
		}
	}
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
