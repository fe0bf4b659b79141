//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunInAnUnwritableFolderSaysWhatToDo runs pixir run where .pixir/
// cannot be created for want of permission. Root bypasses permissions, so
// as root the binary runs as the user nobody (65534); where that is not
// allowed either, the test is skipped (run_state_folder_blocked still
// covers the message, with a file where the folder should be).
func TestRunInAnUnwritableFolderSaysWhatToDo(t *testing.T) {
	base, err := os.MkdirTemp("", "pixir-unwritable-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	require.NoError(t, os.Mkdir(ws, 0o755))
	require.NoError(t, os.Mkdir(home, 0o777))
	require.NoError(t, os.Chmod(home, 0o777))
	require.NoError(t, os.Chmod(ws, 0o555))
	t.Cleanup(func() { _ = os.Chmod(ws, 0o755) })

	bin := pixirBin
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// nobody must reach the binary: the test build's folder is private.
		bin = filepath.Join(base, "pixir")
		copyFile(t, pixirBin, bin)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd := exec.Command(bin, "run", "hello")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		if cred != nil && err != nil {
			t.Skipf("running as root, and cannot start the binary as nobody to meet a permission check: %v", err)
		}
		t.Fatalf("pixir run in a read-only folder: want an exit code, got %v; stdout: %s", err, stdout.String())
	}
	got := strings.ReplaceAll("$ pixir run hello\n--- stdout\n"+stdout.String()+"--- stderr\n"+stderr.String()+fmt.Sprintf("--- exit %d\n", exit.ExitCode()), ws, "$WS")
	checkGolden(t, filepath.Join("testdata", "cli", "run_state_folder_unwritable.golden"), got)
	_, err = os.Stat(filepath.Join(ws, ".pixir"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestACPSessionInABlockedFolderSaysWhatToDo: an editor that opens a
// session where .pixir/ cannot be made gets the same explanation in the
// error of session/new.
func TestACPSessionInABlockedFolderSaysWhatToDo(t *testing.T) {
	e := newEnv(t, "")
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, ".pixir"), nil, 0o644))
	a := e.start()
	a.initialize()
	m, _ := a.call(2, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}})
	require.NotNil(t, m.Error, "session/new in a blocked folder")
	require.Equal(t, -32602, m.Error.Code)
	require.Contains(t, m.Error.Message, "cannot create "+filepath.Join(e.ws, ".pixir")+", where Pixir keeps this workspace's session Logs: a file named .pixir is in the way; rename or remove that file, or work in another folder")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// TestASessionsFolderThatCannotBeWrittenSaysWhatToDo: .pixir/sessions is
// there, with a session in it, but this user may not write in it (another
// user made it, as a pixir run under sudo does). A new session and a
// resume of the old one are refused as invalid input naming the folder,
// why and what to do, and the session's Log is left as it was; reading it
// still works. They said "creating session log: open …: permission
// denied", which says neither whose the folder is nor what to do. As
// root, the binary runs as nobody, to whom root's files are closed.
func TestASessionsFolderThatCannotBeWrittenSaysWhatToDo(t *testing.T) {
	base, err := os.MkdirTemp("", "pixir-sessions-closed-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	e := &runEnv{t: t, home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws")}
	require.NoError(t, os.MkdirAll(e.ws, 0o777))
	require.NoError(t, os.Chmod(e.ws, 0o777))
	_, stderr, code := e.pixir("run", "hello")
	require.Equal(t, exitOK, code, stderr)
	sid := onlySession(t, e.ws)
	sessions := filepath.Join(e.ws, ".pixir", "sessions")
	logPath := filepath.Join(sessions, sid+".ndjson")
	before, err := os.ReadFile(logPath)
	require.NoError(t, err)

	home := filepath.Join(base, "other-home")
	require.NoError(t, os.Mkdir(home, 0o777))
	require.NoError(t, os.Chmod(home, 0o777))
	bin := pixirBin
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		bin = filepath.Join(base, "pixir")
		copyFile(t, pixirBin, bin)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	} else {
		require.NoError(t, os.Chmod(logPath, 0o444))
		require.NoError(t, os.Chmod(sessions, 0o555))
		t.Cleanup(func() { _ = os.Chmod(sessions, 0o755) })
	}
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = e.ws
		cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			if cred != nil && err != nil {
				t.Skipf("running as root, and cannot start the binary as nobody to meet a permission check: %v", err)
			}
			require.NoError(t, err)
			return stdout.String(), stderr.String(), 0
		}
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	for _, args := range [][]string{{"run", "hello"}, {"resume", sid[:8], "hello"}} {
		_, stderr, code := run(args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "where Pixir keeps this workspace's session Logs: permission denied; make "+sessions+
			" and its files writable for you (another user made them, as a pixir run under sudo does), or work in a folder you can write", args)
		require.Contains(t, stderr, "pixir inspect and pixir sessions still read what is there", args)
	}
	_, stderr, code = run("resume", sid[:8], "hello")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "cannot write "+logPath)
	stdout, stderr, code := run("inspect", sid[:8])
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "hello")
	after, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "the Log is as it was")
}

// TestALogThatCannotBeReadEitherIsNotSaidToBeReadable: the session's Log
// is closed to this user for reading too (another user's 0600 file), so
// resuming it is refused without the promise that pixir inspect and pixir
// sessions still read what is there, which they cannot. As root, the
// binary runs as nobody, to whom root's 0600 file is closed.
func TestALogThatCannotBeReadEitherIsNotSaidToBeReadable(t *testing.T) {
	base, err := os.MkdirTemp("", "pixir-log-closed-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	e := &runEnv{t: t, home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws")}
	require.NoError(t, os.MkdirAll(e.ws, 0o777))
	require.NoError(t, os.Chmod(e.ws, 0o777))
	_, stderr, code := e.pixir("run", "hello")
	require.Equal(t, exitOK, code, stderr)
	sid := onlySession(t, e.ws)
	sessions := filepath.Join(e.ws, ".pixir", "sessions")
	logPath := filepath.Join(sessions, sid+".ndjson")
	before, err := os.ReadFile(logPath)
	require.NoError(t, err)

	home := filepath.Join(base, "other-home")
	require.NoError(t, os.Mkdir(home, 0o777))
	require.NoError(t, os.Chmod(home, 0o777))
	bin := pixirBin
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		bin = filepath.Join(base, "pixir")
		copyFile(t, pixirBin, bin)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		require.NoError(t, os.Chmod(logPath, 0o600))
	} else {
		require.NoError(t, os.Chmod(logPath, 0o000))
		t.Cleanup(func() { _ = os.Chmod(logPath, 0o644) })
	}
	cmd := exec.Command(bin, "resume", sid, "hello")
	cmd.Dir = e.ws
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		if cred != nil && err != nil {
			t.Skipf("running as root, and cannot start the binary as nobody to meet a permission check: %v", err)
		}
		t.Fatalf("pixir resume of a Log closed to its user: want an exit code, got %v; output: %s", err, out.String())
	}
	require.Equal(t, exitUsage, exit.ExitCode(), out.String())
	require.Contains(t, out.String(), "cannot write "+logPath+", where Pixir keeps this workspace's session Logs: permission denied")
	require.NotContains(t, out.String(), "still read what is there")
	if cred == nil {
		// Closed to this user (not root) too: opened again to read it.
		require.NoError(t, os.Chmod(logPath, 0o644))
	}
	after, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "the Log is as it was")
}
