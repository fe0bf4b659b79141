// Package doctor is the vocabulary of `pixir doctor`: checks of a provider's
// configuration and server, each with what to fix, as text or JSON.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/runtime/provider/httpstream"
)

// Status of one check.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // worth knowing; does not fail the report
	Fail Status = "fail"
)

// Check is one thing doctor looked at.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do, for a check that did not pass.
	Fix string `json:"fix,omitempty"`
}

// Report is everything doctor found about the configured provider.
type Report struct {
	// OK is true when no check failed.
	OK       bool    `json:"ok"`
	Provider string  `json:"provider"`
	Profile  string  `json:"profile,omitempty"`
	Model    string  `json:"model,omitempty"`
	BaseURL  string  `json:"base_url,omitempty"`
	Checks   []Check `json:"checks"`
}

// Add appends checks and updates OK.
func (r *Report) Add(cs ...Check) {
	r.Checks = append(r.Checks, cs...)
	r.OK = !slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Status == Fail })
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	switch failed := slices.IndexFunc(r.Checks, func(c Check) bool { return c.Status == Fail }); {
	case r.Provider != "":
		fmt.Fprintf(&b, "provider %s", r.Provider)
	case failed >= 0:
		// The configuration that would name it could not be read.
		fmt.Fprintf(&b, "provider not chosen: the %s check below failed", r.Checks[failed].Name)
	default:
		b.WriteString("provider not chosen")
	}
	if r.Profile != "" {
		fmt.Fprintf(&b, " (profile %q)", r.Profile)
	}
	if r.Model != "" {
		fmt.Fprintf(&b, ", model %s", r.Model)
	}
	if r.BaseURL != "" {
		fmt.Fprintf(&b, ", %s", r.BaseURL)
	}
	b.WriteString("\n\n")
	failed := 0
	for _, c := range r.Checks {
		mark := map[Status]string{OK: "ok  ", Warn: "warn", Fail: "FAIL"}[c.Status]
		// A detail of several lines (every problem of a config.toml)
		// keeps to its column.
		detail := strings.ReplaceAll(strings.TrimRight(c.Detail, "\n"), "\n", "\n"+strings.Repeat(" ", len("  ok    ")+11))
		fmt.Fprintf(&b, "  %s  %-10s %s\n", mark, c.Name, detail)
		if c.Fix != "" && c.Status != OK {
			fmt.Fprintf(&b, "        %-10s fix: %s\n", "", c.Fix)
		}
		if c.Status == Fail {
			failed++
		}
	}
	if failed == 0 {
		b.WriteString("\nAll checks passed.\n")
	} else {
		fmt.Fprintf(&b, "\n%d check(s) failed.\n", failed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the report for a script.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ModelList is how a provider lists its models.
type ModelList struct {
	Client  *httpstream.Client
	Request httpstream.Request
	Subject httpstream.Subject
	// Match reports whether the listed id serves the configured model (an
	// alias, a default tag).
	Match func(model, id string) bool
	// Fix is what to do when the model is not listed.
	Fix string
}

type listing struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// ProbeModels fetches the model list: the "server" check (reachable,
// key accepted) and the "model" check (model listed).
func ProbeModels(ctx context.Context, l ModelList) []Check {
	body, err := l.Client.Get(ctx, l.Request)
	if err != nil {
		err = l.Subject.Describe(err)
		check := Check{Name: "server", Status: Fail, Detail: err.Error(), Fix: fixFor(err, l.Subject)}
		return []Check{check, {Name: "model", Status: Warn, Detail: "not checked: the server did not list its models"}}
	}
	var list listing
	if err := json.Unmarshal(body, &list); err != nil {
		return []Check{
			{Name: "server", Status: OK, Detail: "reachable, key accepted"},
			{Name: "model", Status: Warn, Detail: fmt.Sprintf("the model list at %s is not the usual {\"data\":[…]} (%v); cannot tell whether %q is served", l.Request.URL, err, l.Subject.Model)},
		}
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	server := Check{Name: "server", Status: OK, Detail: fmt.Sprintf("reachable, key accepted, %d model(s) listed", len(ids))}
	if l.Subject.Model == "" {
		return []Check{server, {Name: "model", Status: Fail, Detail: "no model is configured", Fix: "set --model, PIXIR_MODEL or model in config.toml; the server lists: " + sample(ids)}}
	}
	for _, id := range ids {
		if l.Match(l.Subject.Model, id) {
			return []Check{server, {Name: "model", Status: OK, Detail: fmt.Sprintf("%q is listed (as %q)", l.Subject.Model, id)}}
		}
	}
	if len(ids) == 0 {
		return []Check{server, {Name: "model", Status: Fail, Detail: "the server lists no models at all", Fix: l.Fix}}
	}
	return []Check{server, {Name: "model", Status: Fail,
		Detail: fmt.Sprintf("%q is not among the models the server lists: %s", l.Subject.Model, sample(ids)), Fix: l.Fix}}
}

func sample(ids []string) string {
	const most = 12
	if len(ids) <= most {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:most], ", ") + fmt.Sprintf(", … (%d more)", len(ids)-most)
}

func fixFor(err error, s httpstream.Subject) string {
	var e *httpstream.Error
	if !errors.As(err, &e) {
		return ""
	}
	switch e.Kind {
	case httpstream.KindUnreachable:
		return "start the server, or point " + s.BaseURLHint + " at it"
	case httpstream.KindAuth:
		return "set " + s.KeyEnv + " to a valid key"
	case httpstream.KindNotFound:
		return "check " + s.BaseURLHint
	case httpstream.KindIdle:
		return "check that the server is healthy"
	}
	return "see the message above"
}
