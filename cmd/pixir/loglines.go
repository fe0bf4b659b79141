package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// personHandler writes the runtime's log records for a person reading a
// terminal (pixir run, resume, smoke, tools): "pixir: warning: <message>
// (key: value, …)", one record a line; a value of several lines (a list
// of broken agent files) follows on lines of its own, indented. slog's
// text format (time=… level=WARN msg="…" err="a\nb") is for log files:
// there a newline is escaped, and a person reads one line of quoted,
// escaped text.
type personHandler struct {
	w     io.Writer
	mu    *sync.Mutex
	level slog.Level
	attrs []slog.Attr // from With, already prefixed by their groups
	group string      // the open group's prefix: "g." or ""
}

func newPersonHandler(w io.Writer, level slog.Level) *personHandler {
	return &personHandler{w: w, mu: &sync.Mutex{}, level: level}
}

func (h *personHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *personHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("pixir: ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	var inline []string
	var blocks []string
	add := func(a slog.Attr, prefix string) {
		h.flatten(a, prefix, func(key, value string) {
			if strings.Contains(value, "\n") {
				blocks = append(blocks, "\n  "+key+":\n    "+strings.ReplaceAll(strings.TrimRight(value, "\n"), "\n", "\n    "))
				return
			}
			inline = append(inline, key+": "+value)
		})
	}
	for _, a := range h.attrs {
		add(a, "")
	}
	r.Attrs(func(a slog.Attr) bool {
		add(a, h.group)
		return true
	})
	if len(inline) > 0 {
		b.WriteString(" (" + strings.Join(inline, ", ") + ")")
	}
	for _, block := range blocks {
		b.WriteString(block)
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// flatten calls emit with each key (groups joined by dots) and value of a.
func (h *personHandler) flatten(a slog.Attr, prefix string, emit func(key, value string)) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, g := range v.Group() {
			h.flatten(g, prefix, emit)
		}
		return
	}
	if a.Key == "" && v.Kind() == slog.KindAny && v.Any() == nil {
		return
	}
	emit(prefix+a.Key, fmt.Sprint(v.Any()))
}

func (h *personHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr{}, h.attrs...)
	for _, a := range attrs {
		if h.group != "" {
			a.Key = h.group + a.Key
		}
		c.attrs = append(c.attrs, a)
	}
	return &c
}

func (h *personHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}
