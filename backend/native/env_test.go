//go:build unix

package native

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

func TestRunnerEnviron(t *testing.T) {
	manager := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/ci", "USER=ci", "LOGNAME=ci", "SHELL=/bin/bash",
		"LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=en_GB", "TZ=UTC", "TMPDIR=/tmp/ci",
		"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "SSL_CERT_FILE=/etc/ca.pem",
		// What must stay with the manager, under any name.
		"MY_TOKEN=ghp_custom_name", "GITHUB_TOKEN=ghp_default", "RUNNER_MANAGER_WEBHOOK_SECRET=hook",
		"MY_HOOK_SECRET=hook2", "SOME_AWS_SECRET=aws", "AWS_ACCESS_KEY_ID=AKIA", "SSH_AUTH_SOCK=/tmp/agent",
		"ACTIONS_RUNNER_INPUT_URL=stale", "ACTIONS_RUNNER_INPUT_JITCONFIG=the-managers-own",
		"RUNNER_MANAGER_ATTEMPT=stale", "PATHOLOGICAL=1", "LC=not-a-prefix-match",
		"CUSTOM_A=1", "CUSTOM_B=2", "PASSED=yes", "NOTPASSED=no", "=C:=C:\\odd", "broken",
	}
	id := rm.NewAttemptID()
	spec := rm.LaunchSpec{
		Attempt:   id,
		JITConfig: "jit",
		Env: []string{
			"MODE=job", "PATH=/opt/tools/bin:/usr/bin", // a policy's value wins over the manager's
			"ACTIONS_RUNNER_INPUT_JITCONFIG=not-this", "RUNNER_ALLOW_RUNASROOT=1", // the launcher's own, never a spec's
		},
	}

	t.Run("AllowList", func(t *testing.T) {
		got := runnerEnviron(manager, []string{"CUSTOM_*", "PASSED"}, spec, false)
		assert.Equal(t, []string{
			"PATH=/opt/tools/bin:/usr/bin", "HOME=/home/ci", "USER=ci", "LOGNAME=ci", "SHELL=/bin/bash",
			"LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=en_GB", "TZ=UTC", "TMPDIR=/tmp/ci",
			"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "SSL_CERT_FILE=/etc/ca.pem",
			"CUSTOM_A=1", "CUSTOM_B=2", "PASSED=yes",
			"MODE=job",
			"ACTIONS_RUNNER_INPUT_JITCONFIG=jit",
			"ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1",
			"RUNNER_MANAGER_ATTEMPT=" + id.String(),
		}, got)
	})
	t.Run("NothingPassed", func(t *testing.T) {
		got := runnerEnviron(manager, nil, rm.LaunchSpec{Attempt: id, JITConfig: "jit"}, false)
		assert.Len(t, got, 13+3)
		for _, kv := range got {
			assert.NotContains(t, kv, "CUSTOM_")
			assert.NotContains(t, kv, "PASSED")
		}
	})
	t.Run("Root", func(t *testing.T) {
		got := runnerEnviron(nil, nil, rm.LaunchSpec{Attempt: id, JITConfig: "jit"}, true)
		assert.Equal(t, []string{
			"ACTIONS_RUNNER_INPUT_JITCONFIG=jit",
			"ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1",
			"RUNNER_MANAGER_ATTEMPT=" + id.String(),
			"RUNNER_ALLOW_RUNASROOT=1",
		}, got)
	})
}
