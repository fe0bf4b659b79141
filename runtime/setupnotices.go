// What the user of a session just opened should know and has no other
// way to see in the editor: agent files that lost to others or were
// ignored, commands that cannot be held by the kernel sandbox, a setting
// that fell back to a default.

package runtime

import (
	"fmt"
	"strings"
)

// catalogWarnings is an AgentCatalog that has warnings about its files
// (shadowed duplicates, ignored files); the agents package's does.
type catalogWarnings interface {
	Warnings() []string
}

// SetupNotices lists the notices of a session's setup (see the file's
// comment). They are not recorded in its Log: each opening has its own.
func (s *Session) SetupNotices() []NoticeData {
	var out []NoticeData
	if load := s.rt.cfg.Subagents.Agents; load != nil && s.depth == 0 {
		if cat, err := load(s.workspace.Root()); err == nil {
			if w, ok := cat.(catalogWarnings); ok {
				if warnings := w.Warnings(); len(warnings) > 0 {
					out = append(out, NoticeData{Source: "agents", Severity: "warning",
						Title:  fmt.Sprintf("%d warning(s) about the agent files (pixir agents lists them)", len(warnings)),
						Detail: strings.Join(warnings, "\n")})
				}
			}
		}
	}
	if sup := s.rt.sandboxSupport(); !sup.Landlock {
		out = append(out, NoticeData{Source: "sandbox", Severity: "warning",
			Title: "Commands run without the kernel sandbox",
			Detail: "This machine offers no Landlock sandbox (" + sup.LandlockProblem + "): a read_only session refuses bash, and agents whose " +
				"commands must be confined are not offered it; writes are checked only after the fact (file tools and isolated snapshots)."})
	}
	s.mu.Lock()
	fallbacks := s.fallbacks
	s.mu.Unlock()
	for _, f := range fallbacks {
		out = append(out, NoticeData{Source: "config", Severity: "info", Title: f.title, Detail: f.detail})
	}
	return out
}

// fallback is a setting of a stored session that could not be kept.
type fallback struct{ title, detail string }
