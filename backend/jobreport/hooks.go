package jobreport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
)

// The runner's hook variables (actions/runner
// src/Runner.Worker/JobExtension.cs:302 and :571).
const (
	EnvJobStarted   = "ACTIONS_RUNNER_HOOK_JOB_STARTED"
	EnvJobCompleted = "ACTIONS_RUNNER_HOOK_JOB_COMPLETED"
)

// Files of the report, in an attempt's root.
const (
	// HookDir holds the hooks and their files, in the attempt's root.
	HookDir = "_runner-manager"
	// StartedScript and CompletedScript are the hooks.
	StartedScript   = "job-started.sh"
	CompletedScript = "job-completed.sh"
	// JobFile is what the started hook recorded of the job.
	JobFile = "job"
	// UsageFile is the job's figures, kept current by a Tracker.
	UsageFile = "usage"
	// dotEnv is the runner's own .env in its root (Program.cs:172-199).
	dotEnv = ".env"
)

// Info is what the hooks say of where the job ran.
type Info struct {
	// Attempt is the attempt's id.
	Attempt string
	// Policy and Host are the names of the policy and the host that ran it.
	Policy, Host string
	// Backend is the policy's backend ("native").
	Backend string
	// Workspace says whether the job's work folder and caches were warm
	// (Workspace below); "" says nothing.
	Workspace string
}

// Workspace is how the report names an attempt's work folder: warm (its
// repository's slot, with what earlier jobs kept in it), a new slot, or
// cold (one of its own) when slot is nil.
func Workspace(slot *rm.WarmSlot) string {
	switch {
	case slot == nil:
		return "cold: a work folder of its own, removed with the runner"
	case slot.Fresh:
		return "cold: slot " + slot.String() + ", new (later jobs of the repository find it warm)"
	}
	return "warm: slot " + slot.String() + ", " + bytesize.Format(uint64(max(slot.Bytes, 0))) + " kept from earlier jobs (checkout, tool cache, caches)"
}

// Install writes the hooks into root/HookDir and returns the variables to
// set in the runner's environment ("NAME=path"). env is the runner's
// environment as the launcher built it: a hook it names (or the root's
// .env names, which the listener sets over its environment) is the user's,
// chained by the manager's script. The root's .env loses those lines (it
// is the attempt's own copy), or they would win over the manager's.
func Install(root string, info Info, env []string) ([]string, error) {
	dir := filepath.Join(root, HookDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("job report: %w", err)
	}
	user := map[string]string{EnvJobStarted: lookup(env, EnvJobStarted), EnvJobCompleted: lookup(env, EnvJobCompleted)}
	fromDotEnv, err := takeFromDotEnv(filepath.Join(root, dotEnv))
	if err != nil {
		return nil, fmt.Errorf("job report: the root's .env: %w", err)
	}
	for k, v := range fromDotEnv {
		user[k] = v // the listener sets .env over its environment: it is what would have run
	}
	data := scriptData{
		Dir:       quote(dir),
		Root:      quote(root),
		Attempt:   quote(clean(info.Attempt)),
		Policy:    quote(clean(info.Policy)),
		Host:      quote(clean(info.Host)),
		Backend:   quote(clean(info.Backend)),
		Workspace: quote(clean(info.Workspace)),
	}
	var out []string
	for _, h := range []struct{ env, name, script string }{
		{EnvJobStarted, StartedScript, startedHook},
		{EnvJobCompleted, CompletedScript, completedHook},
	} {
		data.User = quote(user[h.env])
		path := filepath.Join(dir, h.name)
		if err := writeFile(path, []byte(fill(h.script, data)), 0o700); err != nil {
			return nil, fmt.Errorf("job report: %w", err)
		}
		out = append(out, h.env+"="+path)
	}
	return out, nil
}

// lookup is the last value env gives name ("" for none).
func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// takeFromDotEnv removes the hook variables from the .env file at path and
// returns their values, read as the listener reads them: a line
// NAME=value, the last one of a name winning. A missing file is none.
func takeFromDotEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	found := map[string]string{}
	var kept []string
	lines := strings.Split(string(b), "\n")
	for _, line := range lines {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\r"), "=")
		if k == EnvJobStarted || k == EnvJobCompleted {
			found[k] = v
			continue
		}
		kept = append(kept, line)
	}
	if len(found) == 0 {
		return nil, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return found, writeFile(path, []byte(strings.Join(kept, "\n")), info.Mode().Perm())
}

// writeFile writes b to path through a temporary file renamed into place:
// a reader sees the old file or the new one, never half of one.
func writeFile(path string, b []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// quote is s as one single-quoted shell word.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// clean keeps a name printable on one line: what a log line and a table
// cell of the step summary can hold.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r < ' ' || r == 0x7f:
			return -1
		case r == '|':
			return '/'
		}
		return r
	}, s)
}

type scriptData struct {
	Dir, Root, User                           string
	Attempt, Policy, Host, Backend, Workspace string
}

// The scripts are POSIX sh: the runner runs them with bash -e -o pipefail,
// or sh -e (ScriptHandlerHelpers.cs:18-19). Each turns -e off first: the
// manager's part must never fail a job. runUser runs the user's hook as
// the runner would have run it (HostContext.cs:812-834 picks the shell by
// extension; ScriptHandlerHelpers.cs:15-19 gives its arguments) and is the
// script's exit status.
//
// They are plain strings with placeholders (@@DIR@@ and the like), not a
// text/template: text/template calls methods by name through reflection,
// which keeps every exported method of every type in a program that links
// it (6.6 MB of text and read-only data in reconcile's test binary, all of
// it resident), for seven words to fill in.
const (
	startedHook = `#!/bin/sh
# Written by runner-manager for attempt @@ATTEMPT@@: records the job as the
# runner sees it (the manager's journal names the attempt's job from it,
# where GitHub did not), then runs the hook the runner had before, if any.
set +e
rm_dir=@@DIR@@
{
	umask 077
	printf 'started_at=%s\nrepository=%s\nworkflow=%s\nworkflow_ref=%s\njob=%s\nrun_id=%s\nrun_attempt=%s\n' \
		"$(date +%s)" "$GITHUB_REPOSITORY" "$GITHUB_WORKFLOW" "$GITHUB_WORKFLOW_REF" "$GITHUB_JOB" \
		"$GITHUB_RUN_ID" "$GITHUB_RUN_ATTEMPT" >"$rm_dir/job.tmp" &&
		mv -f "$rm_dir/job.tmp" "$rm_dir/job"
} 2>/dev/null
`
	completedHook = `#!/bin/sh
# Written by runner-manager for attempt @@ATTEMPT@@: prints what the job
# used, as the manager metered it (the figures in usage are the manager's,
# at most one sample old), then runs the hook the runner had before, if any.
set +e
rm_dir=@@DIR@@
rm_report() {
	rm_now=$(date +%s)
	rm_started=
	rm_sampled=
	rm_scope=
	rm_peak=
	rm_avg=
	rm_busiest=
	rm_samples=
	rm_source=
	if [ -f "$rm_dir/job" ]; then
		while IFS='=' read -r rm_k rm_v; do
			case "$rm_k" in
			started_at) [ -z "$rm_started" ] && rm_started=$rm_v ;;
			esac
		done <"$rm_dir/job"
	fi
	# The manager rewrites usage in place at every sample: a read is
	# whole when the write number of its first line (seq) and of its last
	# (end) agree; else it is read again (a seqlock).
	rm_try=0
	while [ -f "$rm_dir/usage" ] && [ "$rm_try" -lt 5 ]; do
		rm_try=$((rm_try + 1))
		rm_seq=
		rm_end=
		while IFS='=' read -r rm_k rm_v; do
			case "$rm_k" in
			seq) [ -z "$rm_seq" ] && rm_seq=$rm_v ;;
			end) rm_end=$rm_v ;;
			sampled_at) rm_sampled=$rm_v ;;
			scope) rm_scope=$rm_v ;;
			peak_memory) rm_peak=$rm_v ;;
			cpu_avg_cores) rm_avg=$rm_v ;;
			cpu_busiest_cores) rm_busiest=$rm_v ;;
			samples) rm_samples=$rm_v ;;
			source) rm_source=$rm_v ;;
			esac
		done <"$rm_dir/usage"
		[ -n "$rm_seq" ] && [ "$rm_seq" = "$rm_end" ] && break
		rm_sampled= rm_scope= rm_peak= rm_avg= rm_busiest= rm_samples= rm_source=
	done
	rm_duration="unknown"
	case "$rm_started" in
	'' | *[!0-9]*) ;;
	*)
		rm_d=$((rm_now - rm_started))
		if [ "$rm_d" -ge 3600 ]; then
			rm_duration=$(printf '%dh%02dm%02ds' $((rm_d / 3600)) $((rm_d % 3600 / 60)) $((rm_d % 60)))
		else
			rm_duration=$(printf '%dm%02ds' $((rm_d / 60)) $((rm_d % 60)))
		fi ;;
	esac
	rm_ago=
	case "$rm_sampled" in
	'' | *[!0-9]*) ;;
	*) rm_ago=", the last $((rm_now - rm_sampled)) s ago" ;;
	esac
	rm_what="the job"
	[ "$rm_scope" = runner ] && rm_what="the runner (the job's start was not seen)"
	echo "runner-manager: what this job used, as the manager metered it"
	if [ -n "$rm_peak" ]; then
		echo "  peak memory   $rm_peak"
		echo "  CPU           $rm_avg cores on average, $rm_busiest cores at its busiest"
	else
		echo "  usage         not metered yet (no sample of this runner's processes)"
	fi
	echo "  duration      $rm_duration"
	echo "  ran on        host "@@HOST@@", policy "@@POLICY@@" ("@@BACKEND@@", attempt "@@ATTEMPT@@")"
	[ -n @@WORKSPACE@@ ] && echo "  workspace     "@@WORKSPACE@@
	[ -n "$rm_peak" ] && echo "  measured      $rm_what, from its $rm_source: $rm_samples samples$rm_ago"
	if [ -n "$GITHUB_STEP_SUMMARY" ]; then
		{
			echo "### Runner footprint"
			echo ""
			echo "| | |"
			echo "|---|---|"
			if [ -n "$rm_peak" ]; then
				echo "| Peak memory | $rm_peak |"
				echo "| CPU, average | $rm_avg cores |"
				echo "| CPU, busiest | $rm_busiest cores |"
			fi
			echo "| Duration | $rm_duration |"
			echo "| Host | "@@HOST@@" |"
			echo "| Policy | "@@POLICY@@" ("@@BACKEND@@") |"
			[ -n @@WORKSPACE@@ ] && echo "| Workspace | "@@WORKSPACE@@" |"
			echo ""
			echo "Metered by runner-manager: $rm_what, from its ${rm_source:-nothing}, ${rm_samples:-0} samples."
		} >>"$GITHUB_STEP_SUMMARY"
	fi
}
rm_report 2>/dev/null
`
	runUser = `rm_user=@@USER@@
if [ -z "$rm_user" ]; then
	exit 0
fi
if [ ! -f "$rm_user" ]; then
	echo "File doesn't exist: $rm_user" >&2
	exit 1
fi
case "$rm_user" in
*.sh)
	if command -v bash >/dev/null 2>&1; then
		bash --noprofile --norc -e -o pipefail "$rm_user"
	else
		sh -e "$rm_user"
	fi ;;
*.ps1)
	if command -v pwsh >/dev/null 2>&1; then
		pwsh -command ". '$rm_user'"
	else
		powershell -command ". '$rm_user'"
	fi ;;
*.js)
	rm_node=
	for rm_n in @@ROOT@@/externals/node*/bin/node; do
		[ -x "$rm_n" ] && rm_node=$rm_n
	done
	"${rm_node:-node}" "$rm_user" ;;
*)
	echo "$rm_user is not a valid path to a script. Make sure it ends in '.sh', '.ps1' or '.js'." >&2
	exit 1 ;;
esac`
)

// fill is a hook's script, its own part then runUser, with d's words in
// place of the placeholders, replaced in one pass: a word that holds a
// placeholder's text stays as it is.
func fill(hook string, d scriptData) string {
	return strings.NewReplacer("@@DIR@@", d.Dir, "@@ROOT@@", d.Root, "@@USER@@", d.User,
		"@@ATTEMPT@@", d.Attempt, "@@POLICY@@", d.Policy, "@@HOST@@", d.Host,
		"@@BACKEND@@", d.Backend, "@@WORKSPACE@@", d.Workspace).Replace(hook + runUser + "\n")
}
