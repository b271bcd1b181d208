// Command runner-manager is the CLI of runner-manager under the name it
// installs as (go install ./frontends/cli/cmd/runner-manager): the
// daemon's commands alone. The demo and the bench, with the fake GitHub,
// fake runner and baseline scaler they run, are frontends/cli's
// (go run ./frontends/cli demo): the daemon's binary does not carry them.
package main

import (
	"os"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

func main() { os.Exit(app.MainDaemon()) }
