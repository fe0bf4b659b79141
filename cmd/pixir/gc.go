package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/runtime/cleanup"
)

// defaultGCAge is how long a session's Log or a Subagent's folder stays
// after it was last written.
const defaultGCAge = 7 * 24 * time.Hour

// runGC is `pixir gc [--dry-run] [--older-than AGE] [--json] [--cwd DIR]`:
// removes the old session Logs and Subagent folders of a workspace's
// .pixir/ and says what it freed.
func runGC(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir gc [--dry-run] [--older-than AGE] [--json] [--cwd DIR]\n\nRemoves the session Logs and Subagent folders of a workspace's .pixir/ that nothing wrote to\nfor AGE (default 7d), and says what it freed.\nExit codes: 0 done, 1 something could not be removed, 64 invalid flags.\n")
	dryRun := fs.Bool("dry-run", false, "say what would be removed, and remove nothing")
	age := ageFlag(defaultGCAge)
	fs.Var(&age, "older-than", "remove what nothing wrote to for this long: 7d, 36h, 90m (0 removes everything not being written now)")
	asJSON := fs.Bool("json", false, "print {workspace, dry_run, older_than_ms, removed: [{kind, path, bytes, last_write}], freed_bytes, kept, in_use, errors}")
	cwd := fs.String("cwd", "", "the workspace to clean (default: the current directory)")
	rest, code, done := parseFlags(fs, args, false, stdout, stderr)
	if done {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "pixir gc: unexpected argument %q; usage: pixir gc [--dry-run] [--older-than AGE] [--json] [--cwd DIR]\n", rest[0])
		return exitUsage
	}
	dir, err := projectDir(*cwd)
	if err != nil {
		fmt.Fprintln(stderr, "pixir gc:", err)
		return exitUsage
	}
	line := func(verb string, it cleanup.Item) {
		fmt.Fprintf(stdout, "%s %s (%s, %s, last written %s)\n", verb, it.Path, it.Kind, bytesText(it.Bytes), it.LastWrite.Local().Format("2006-01-02 15:04"))
	}
	var each func(cleanup.Item)
	if !*asJSON {
		// Each removal is said when it is done: a workflow's snapshots
		// take minutes to remove, and nothing else would show meanwhile.
		each = func(it cleanup.Item) { line("remove", it) }
	}
	rep, err := cleanup.CollectEach(dir, time.Duration(age), time.Now(), *dryRun, each)
	if err != nil {
		fmt.Fprintln(stderr, "pixir gc:", err)
		return exitError
	}
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			fmt.Fprintln(stderr, "pixir gc:", err)
			return exitError
		}
	} else {
		did := "Removed"
		if *dryRun {
			did = "Would remove"
			for _, it := range rep.Removed {
				line("would remove", it)
			}
		}
		fmt.Fprintf(stdout, "%s %s, %s; kept %d written in the last %s", did, plural.Of(len(rep.Removed), "item", "items"), bytesText(rep.Freed), rep.Kept, age.String())
		switch rep.InUse {
		case 0:
		case 1:
			fmt.Fprint(stdout, ", and 1 older item of a session a running process has open")
		default:
			fmt.Fprintf(stdout, ", and %d older items of sessions running processes have open", rep.InUse)
		}
		fmt.Fprintln(stdout, ".")
		for _, e := range rep.Errors {
			fmt.Fprintln(stderr, "pixir gc: not removed:", e)
		}
	}
	if len(rep.Errors) > 0 {
		return exitError
	}
	return exitOK
}

// ageFlag is a duration that also takes days ("7d").
type ageFlag time.Duration

func (a *ageFlag) String() string {
	d := time.Duration(*a)
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	return d.String()
}

func (a *ageFlag) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a number of days (7d)", s)
		}
		*a = ageFlag(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("%q is not an age: write 7d, 36h or 90m", s)
	}
	*a = ageFlag(d)
	return nil
}

// bytesText is a size as people read it.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
