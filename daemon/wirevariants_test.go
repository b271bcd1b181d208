package daemon_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// wireVariants are the answers GitHub's code allows where it allows more
// than one (docs/github.md): the whole daemon must serve against each.
func wireVariants() []struct {
	name string
	opts []fakegithub.Option
} {
	type variant = struct {
		name string
		opts []fakegithub.Option
	}
	// Every pair of answers meets once (registration status × assignment,
	// assignment × job id form, job id form × registration status).
	var out []variant
	for i, reg := range []int{http.StatusCreated, http.StatusOK} {
		for j, direct := range []bool{false, true} {
			// Short names: the data directory's socket path must stay
			// within the 108 bytes a unix socket allows.
			form, formName := fakegithub.JobIDUUID, "uuid"
			if (i+j)%2 == 1 {
				form, formName = fakegithub.JobIDNumeric, "num"
			}
			v := variant{name: fmt.Sprintf("%d", reg),
				opts: []fakegithub.Option{fakegithub.WithRunnerRegistrationStatus(reg), fakegithub.WithScaleSetJobIDs(form)}}
			if direct {
				v.name += "-direct"
				v.opts = append(v.opts, fakegithub.WithDirectAssignment())
			} else {
				v.name += "-acquire"
			}
			v.name += "-" + formName
			out = append(out, v)
		}
	}
	return out
}

// Scale-set mode, the default, end to end against every wire variant:
// each job served once by a runner of its own and journaled as completed.
func TestRunWireVariants(t *testing.T) {
	for _, v := range wireVariants() {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t, v.opts...)
			d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), SampleEvery: 100 * time.Millisecond, Logger: testLogger(t)})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, d.Close()) })
			p := w.addPolicy(t, d, "home", false)
			stop := start(t, d)
			w.serve(t, 3, "home", false)
			require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 3 }, 20*time.Second, 50*time.Millisecond)
			ids := map[string]bool{}
			for _, j := range w.gh.Jobs() {
				assert.Equal(t, 1, j.Starts, "job %d", j.ID)
				ids[j.ScaleSetJobID] = true
			}
			as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
			require.NoError(t, err)
			named := 0
			for _, a := range as {
				if a.Outcome.Kind == rm.CompletedJob && ids[a.Job.ID] {
					named++
				}
			}
			assert.Equal(t, 3, named, "every completed attempt names its job by the id GitHub's messages gave")
			require.NoError(t, stop())
		})
	}
}
