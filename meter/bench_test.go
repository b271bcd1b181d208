//go:build unix

package meter_test

import (
	"os/exec"
	"syscall"
	"testing"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// BenchmarkSampleOnce is one whole metering pass of a host with 10 policies
// and 50 live attempts, each a real process: the journal read (the host's
// live attempts), one look at the process table, the identity
// check of each runner, and the meters' update.
func BenchmarkSampleOnce(b *testing.B) {
	st := sqlitetest.MustOpen(b)
	host := storetest.NewHost().Build()
	if err := st.PutHost(b.Context(), host); err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		p := storetest.NewPolicy().Repository("acme/repo").Host(host.ID).Autoscale("set"+string(rune('a'+i)), 5).Active().Build()
		if err := st.InsertPolicy(b.Context(), p); err != nil {
			b.Fatal(err)
		}
		for range 5 {
			cmd := exec.Command("sleep", "600")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			start, err := platform.StartTime(cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			a := storetest.NewAttempt().Policy(p.ID).State(rm.StateBusy).GitHubRunnerID(1).
				ProcessID(cmd.Process.Pid).ProcessStart(start).Build()
			if err := st.RecordAttempt(b.Context(), a); err != nil {
				b.Fatal(err)
			}
		}
	}
	ms := meter.New("")
	if gone := ms.SampleOnce(st, host.ID); len(gone) != 0 {
		b.Fatalf("runners seen gone: %v", gone)
	}
	b.ResetTimer()
	for b.Loop() {
		ms.SampleOnce(st, host.ID)
	}
}
