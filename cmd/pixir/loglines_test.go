package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPersonHandler(t *testing.T) {
	var b strings.Builder
	log := slog.New(newPersonHandler(&b, slog.LevelWarn))
	log.Info("not shown")
	log.With("session", "3f2a").Warn("commands are not sandboxed", "reason", "no Landlock")
	log.WithGroup("mcp").Error("server stopped", "server", "docs", "err", errors.New("line one\nline two\n"))
	require.Equal(t, "pixir: warning: commands are not sandboxed (session: 3f2a, reason: no Landlock)\n"+
		"pixir: error: server stopped (mcp.server: docs)\n  mcp.err:\n    line one\n    line two\n", b.String())
}
