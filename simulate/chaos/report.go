package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Report is a chaos run's results with how they were produced.
type Report struct {
	// Command is what reproduces the run.
	Command string   `json:"command"`
	Started string   `json:"started"`
	Host    string   `json:"host"`
	Results []Result `json:"results"`
}

// WriteJSON writes the report as indented JSON.
func (rep Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteMarkdown writes the report as a markdown table, then each
// scenario's outcomes, notes and missed goals.
func (rep Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`; started %s on %s.\n\n", rep.Command, rep.Started, rep.Host)
	b.WriteString(Table(rep.Results))
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "\n**%s**: outcomes %s", r.Scenario, outcomeList(r.Outcomes))
		if r.AfterStop != nil {
			a := r.AfterStop
			fmt.Fprintf(&b, "; after SIGTERM %d idle and %d busy registrations, %d runner processes, %d jobs running",
				a.IdleRegistrations, a.BusyRegistrations, a.Processes, a.JobsRunning)
		}
		if s := r.CredentialsSearched; s != nil {
			fmt.Fprintf(&b, "; %d credentials searched for in %d files and %d outputs (%.1f MB)", s.Credentials, s.Files, s.Texts, float64(s.Bytes)/1e6)
			if r.SparesKept > 0 {
				fmt.Fprintf(&b, ", %d seen in the live spares' roots (the control)", r.SpareCredentialsSeen)
			}
		}
		if len(r.SecretNames) > 0 {
			fmt.Fprintf(&b, "; runners held %s", strings.Join(r.SecretNames, ", "))
		}
		b.WriteString(".\n")
		for _, m := range r.Missed {
			fmt.Fprintf(&b, "- missed: %s\n", m)
		}
		for _, m := range r.MismatchDetail {
			fmt.Fprintf(&b, "- mismatch: %s\n", m)
		}
		for _, l := range r.CredentialLeaks {
			fmt.Fprintf(&b, "- credential: %s\n", l)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- note: %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Table renders results as one markdown table, a row per scenario.
func Table(results []Result) string {
	var b strings.Builder
	b.WriteString("| scenario | served | twice | regs left | procs left | dirs left | live w/o proc | charged while limited | next job after fault (s) | mismatches | secrets seen | creds found | crashes | s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		charged := "–"
		if r.ChargedWhileLimited >= 0 {
			charged = fmt.Sprintf("%d (≤ %d)", r.ChargedWhileLimited, r.ChargedAllowed)
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %d | %d | %d | %d | %d | %s | %s | %d | %d | %d | %d | %.0f |\n",
			r.Scenario, r.Served, r.Jobs, r.RunTwice, r.RegistrationsLeft, r.ProcessesLeft, r.AttemptDirsLeft,
			r.LiveWithoutProcess, charged, recoveryCell(r), r.OutcomeMismatches, r.SecretsSeen, r.CredentialsFound, r.DaemonCrashes, r.Seconds)
	}
	return b.String()
}

func recoveryCell(r Result) string {
	if len(r.RecoverySeconds) == 0 {
		return "–"
	}
	parts := make([]string, 0, len(r.RecoverySeconds))
	for _, s := range r.RecoverySeconds {
		if s < 0 {
			parts = append(parts, "never")
		} else {
			parts = append(parts, fmt.Sprintf("%.1f", s))
		}
	}
	cell := strings.Join(parts, ", ")
	if len(parts) > 5 {
		cell = fmt.Sprintf("max %s of %d", maxCell(r), len(parts))
	}
	return fmt.Sprintf("%s (≤ %.0f)", cell, r.RecoveryBound)
}

func maxCell(r Result) string {
	if m := r.MaxRecovery(); m >= 0 {
		return fmt.Sprintf("%.1f", m)
	}
	return "never"
}

func outcomeList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
