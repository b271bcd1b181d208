package github_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClassicWatchTiming runs a classic Watch in a synctest bubble against
// an in-memory REST handler: it waits out an exhausted budget until the
// reset (sending nothing meanwhile), then polls every PollInterval, and at
// once on a nudge.
func TestClassicWatchTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reset := time.Now().Add(10 * time.Minute)
		var mu sync.Mutex
		requests := 0
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			requests++
			mu.Unlock()
			w.Header().Set("X-RateLimit-Limit", "5000")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			if time.Now().Before(reset) {
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, `{"message":"API rate limit exceeded"}`)
				return
			}
			w.Header().Set("X-RateLimit-Remaining", "4999")
			switch {
			case r.URL.Path == "/api/v3/repos/octo/app/actions/runs" && r.URL.Query().Get("status") == "queued":
				_, _ = io.WriteString(w, `{"total_count":1,"workflow_runs":[{"id":10,"status":"queued"}]}`)
			case r.URL.Path == "/api/v3/repos/octo/app/actions/runs":
				_, _ = io.WriteString(w, `{"total_count":0,"workflow_runs":[]}`)
			case r.URL.Path == "/api/v3/repos/octo/app/actions/runs/10/jobs":
				_, _ = io.WriteString(w, `{"total_count":2,"jobs":[
					{"id":100,"run_id":10,"status":"queued","labels":["self-hosted","gpu"]},
					{"id":101,"run_id":10,"status":"queued","labels":["windows"]}]}`)
			default:
				w.WriteHeader(http.StatusNotFound)
			}
		})
		count := func() int { mu.Lock(); defer mu.Unlock(); return requests }

		c, err := github.New(github.Config{WebURL: "https://ghes.example", Token: "t", Transport: handlerTransport{h}})
		require.NoError(t, err)
		scope, _ := rm.Repository("octo/app")
		target, _ := rm.NewLabelTarget(scope, "", []string{"gpu"})
		ct, err := github.NewClassicTarget(c, target, github.ClassicOptions{PollInterval: 30 * time.Second})
		require.NoError(t, err)

		var reports []time.Time
		var wanted []int
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			done <- ct.Watch(ctx, func() int { return 1 }, func(d rm.Demand) {
				mu.Lock()
				defer mu.Unlock()
				reports, wanted = append(reports, time.Now()), append(wanted, d.Wanted)
			})
		}()
		reported := func() int { mu.Lock(); defer mu.Unlock(); return len(reports) }
		report := func(i int) (time.Time, int) { mu.Lock(); defer mu.Unlock(); return reports[i], wanted[i] }

		synctest.Wait()
		assert.Equal(t, 1, count(), "one request learns the budget is spent")
		assert.Equal(t, 0, reported())

		time.Sleep(10*time.Minute - time.Second)
		synctest.Wait()
		assert.Equal(t, 1, count(), "nothing is sent before the reset")

		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, 1, reported(), "the poll resumes at the reset")
		assert.Equal(t, 5, count(), "three run lists (queued, in progress, completed lately) and one jobs list")
		at, n := report(0)
		assert.Equal(t, reset, at, "at the reset, not later")
		assert.Equal(t, 1, n, "only the job our labels match")

		time.Sleep(28 * time.Second) // 29 s after the first poll
		synctest.Wait()
		assert.Equal(t, 1, reported())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, reported(), "the next poll after PollInterval")

		at, _ = report(1)
		assert.Equal(t, reset.Add(30*time.Second), at)

		time.Sleep(5 * time.Second)
		nudged := time.Now()
		ct.Nudge()
		synctest.Wait()
		assert.Equal(t, 3, reported(), "a nudge polls at once")
		at, _ = report(2)
		assert.Equal(t, nudged, at, "without waiting")

		cancel()
		require.NoError(t, <-done)
	})
}

func TestForbiddenNamesThePermission(t *testing.T) {
	tests := []struct {
		name, scope, header, value, want string
	}{
		{"FineGrained", "org:acme", "X-Accepted-GitHub-Permissions", "organization_self_hosted_runners=write", "organization_self_hosted_runners:write on the organization acme"},
		{"Alternatives", "repo:octo/app", "X-Accepted-GitHub-Permissions", "administration=write; actions=write,metadata=read", "administration:write or actions:write and metadata:read on the repository octo/app"},
		{"ClassicToken", "repo:octo/app", "X-Accepted-OAuth-Scopes", "repo", "the token scope repo on the repository octo/app"},
		{"NoHeader", "enterprise:big", "", "", "manage_runners:enterprise scope on the enterprise big"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set(tt.header, tt.value)
				}
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, `{"message":"Resource not accessible by integration"}`)
			})
			c := newClient(t, a, newClock(), &sleeps{}, nil)
			scope, err := rm.ParseScope(tt.scope)
			require.NoError(t, err)
			target, err := rm.NewLabelTarget(scope, "", []string{"gpu"})
			require.NoError(t, err)
			ct, err := github.NewClassicTarget(c, target, github.ClassicOptions{})
			require.NoError(t, err)
			_, err = ct.JITConfig(t.Context(), "rm-x")
			require.ErrorIs(t, err, rm.ErrUnauthorized)
			assert.Contains(t, err.Error(), tt.want)
			// generate-jitconfig carries a credential: its answer, even
			// GitHub's message, is never quoted (errmap.go credentialRoute).
			assert.NotContains(t, err.Error(), "Resource not accessible by integration")
			assert.NotContains(t, err.Error(), secretToken)
		})
	}
}
