// Command runner-manager is the same program as frontends/cli, under the
// name it installs as: go install ./frontends/cli/cmd/runner-manager.
package main

import (
	"os"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

func main() { os.Exit(app.Main()) }
