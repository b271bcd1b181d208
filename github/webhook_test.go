package github_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSignOfficialVector(t *testing.T) {
	got := hex.EncodeToString(github.Sign([]byte("It's a Secret to Everybody"), []byte("Hello, World!")))
	assert.Equal(t, "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", got)
}

const jobPayload = `{
  "action": "queued",
  "workflow_job": {
    "id": 29679449, "run_id": 10815282, "name": "build", "workflow_name": "CI",
    "status": "queued", "labels": ["self-hosted", "linux", "gpu"],
    "runner_id": null, "runner_name": null, "conclusion": null
  },
  "repository": {"full_name": "octo-org/app"},
  "organization": {"login": "octo-org"}
}`

type webhookCase struct {
	name     string
	method   string
	event    string
	delivery string
	body     string
	sig      string // "" signs with the right secret; "-" sends none
	want     int
	wantJobs int
}

func TestWebhook(t *testing.T) {
	secret := []byte("It's a Secret to Everybody")
	sign := func(body string) string {
		return "sha256=" + hex.EncodeToString(github.Sign(secret, []byte(body)))
	}
	var mu sync.Mutex
	var got []github.WorkflowJobEvent
	h := github.NewWebhookHandler(secret, func(e github.WorkflowJobEvent) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	steps := []webhookCase{
		{name: "OfficialVectorPing", method: "POST", event: "ping", delivery: "d0", body: "Hello, World!",
			sig: "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", want: 200},
		{name: "WorkflowJob", method: "POST", event: "workflow_job", delivery: "d1", body: jobPayload, want: 200, wantJobs: 1},
		{name: "Replay", method: "POST", event: "workflow_job", delivery: "d1", body: jobPayload, want: 200, wantJobs: 1},
		{name: "BadSignature", method: "POST", event: "workflow_job", delivery: "d2", body: jobPayload,
			sig: "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", want: 401, wantJobs: 1},
		{name: "NoSignature", method: "POST", event: "workflow_job", delivery: "d3", body: jobPayload, sig: "-", want: 401, wantJobs: 1},
		{name: "NotHex", method: "POST", event: "workflow_job", delivery: "d3", body: jobPayload, sig: "sha256=zz", want: 401, wantJobs: 1},
		{name: "Oversized", method: "POST", event: "workflow_job", delivery: "d4", body: strings.Repeat("x", github.DefaultWebhookMaxBody+1), want: 413, wantJobs: 1},
		{name: "OtherEvent", method: "POST", event: "push", delivery: "d5", body: `{}`, want: 204, wantJobs: 1},
		{name: "NotPOST", method: "GET", event: "workflow_job", delivery: "d6", body: "", want: 405, wantJobs: 1},
		{name: "Garbage", method: "POST", event: "workflow_job", delivery: "d7", body: `{"action":"queued"}`, want: 400, wantJobs: 1},
		{name: "NewDelivery", method: "POST", event: "workflow_job", delivery: "d8", body: strings.Replace(jobPayload, `"queued"`, `"in_progress"`, 1), want: 200, wantJobs: 2},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			req, err := http.NewRequest(s.method, srv.URL, bytes.NewBufferString(s.body))
			require.NoError(t, err)
			req.Header.Set("X-GitHub-Event", s.event)
			req.Header.Set("X-GitHub-Delivery", s.delivery)
			switch s.sig {
			case "":
				req.Header.Set("X-Hub-Signature-256", sign(s.body))
			case "-":
			default:
				req.Header.Set("X-Hub-Signature-256", s.sig)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, s.want, resp.StatusCode)
			mu.Lock()
			defer mu.Unlock()
			assert.Len(t, got, s.wantJobs)
		})
	}

	require.Len(t, got, 2)
	e := got[0]
	assert.Equal(t, "d1", e.Delivery)
	assert.Equal(t, "queued", e.Action)
	assert.EqualValues(t, 29679449, e.JobID)
	assert.EqualValues(t, 10815282, e.RunID)
	assert.Equal(t, []string{"self-hosted", "linux", "gpu"}, e.Labels)
	assert.Equal(t, "CI", e.WorkflowName)
	assert.Equal(t, "build", e.JobName)
	assert.Equal(t, "octo-org/app", e.Repository)
	assert.Equal(t, "octo-org", e.Organization)
	_, ok := e.JobEvent()
	assert.False(t, ok, "queued is no job event")
	je, ok := got[1].JobEvent()
	require.True(t, ok)
	assert.Equal(t, rm.JobStarted, je.Kind)
	assert.Equal(t, got[1].JobID, je.JobNumber, "a webhook's job id is the REST number")
	assert.Equal(t, strconv.FormatInt(got[1].JobID, 10), je.JobID)
}

func TestMatchLabels(t *testing.T) {
	ours := []string{"self-hosted", "Linux", "X64", "gpu"}
	tests := []struct {
		name string
		job  []string
		want bool
	}{
		{"Exact", []string{"self-hosted", "linux", "gpu"}, true},
		{"CaseInsensitive", []string{"SELF-HOSTED", "LINUX", "x64"}, true},
		{"SelfHostedOnly", []string{"self-hosted"}, true},
		{"NoSelfHosted", []string{"gpu"}, true},
		{"ExtraLabel", []string{"self-hosted", "gpu", "cuda12"}, false},
		{"HostedRunner", []string{"ubuntu-latest"}, false},
		{"NoLabels", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, github.MatchLabels(tt.job, ours))
		})
	}
}
