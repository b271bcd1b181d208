package fakegithub_test

import (
	"context"
	"fmt"
	"os"
	"time"

	gh "github.com/google/go-github/v88/github"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
)

// A job served in classic mode: a JIT config from the REST API, then the
// fake runner (here in-process; tests start bin/Runner.Listener from
// BuildFakeRunner) takes the job and exits 0.
func Example() {
	s := fakegithub.NewServer(fakegithub.WithToken("ghp_example"), fakegithub.WithRepo("octo-org/app"), fakegithub.WithPollTimeout(time.Second))
	defer s.Close()
	id := s.EnqueueJob(fakegithub.JobSpec{Repo: "octo-org/app", Labels: []string{"self-hosted", "linux"}, Duration: 10 * time.Millisecond})

	c, _ := gh.NewClient(gh.WithHTTPClient(s.Client()), gh.WithAuthToken("ghp_example"), gh.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	ctx := context.Background()
	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, "octo-org", "app", &gh.GenerateJITConfigRequest{
		Name: "rm-example", RunnerGroupID: 1, Labels: []string{"self-hosted", "linux", "x64"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	root, _ := os.MkdirTemp("", "runner-root-")
	defer os.RemoveAll(root)
	code := fakerunner.Run(ctx, fakerunner.Config{Root: root, JITConfig: jit.GetEncodedJITConfig()})

	job, _ := s.Job(id)
	fmt.Println("exit", code)
	fmt.Println(job.Status, job.Result, "on", job.RunnerName, "started", job.Starts, "time(s)")
	fmt.Println("REST calls:", s.CallsREST(), "runners left:", len(s.Runners()))
	// Output:
	// exit 0
	// completed succeeded on rm-example started 1 time(s)
	// REST calls: 1 runners left: 0
}
