// Command Runner.Listener is the fake runner's listener, built by
// githubtest.BuildFakeRunner into bin/ of a runner directory.
package main

import (
	"os"

	"github.com/runner-manager/runner-manager/simulate/fakerunner"
)

func main() { os.Exit(fakerunner.Main(os.Args[1:])) }
