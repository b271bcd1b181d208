package chaos

import (
	"reflect"

	"github.com/runner-manager/runner-manager/github/githubtest"
)

// The fake's newer controls, looked up by method so the run builds (and
// says what it lacks) against a fake without them.
type (
	restarter interface{ Restart() }
	revoker   interface {
		RevokeCredentials()
		RestoreCredentials()
	}
	listenerStopper interface {
		StopListening()
		ResumeListening()
	}
	chargedCounter interface{ ChargedCallsWhileLimited() int }
)

// jobRunners names the runners that started job j: every one the fake
// recorded (a []string field naming them, when the fake keeps one), else
// the last.
func jobRunners(j githubtest.JobRecord) []string {
	v := reflect.ValueOf(j)
	for _, name := range []string{"StartedBy", "RunnerNames", "Runners"} {
		if f := v.FieldByName(name); f.IsValid() && f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String {
			return f.Interface().([]string)
		}
	}
	if j.Starts > 0 && j.RunnerName != "" {
		return []string{j.RunnerName}
	}
	return nil
}
