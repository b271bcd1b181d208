// Command runner-manager is the CLI of runner-manager: `go run ./frontends/cli demo`
// runs the whole system against a built-in fake GitHub. The program lives in
// package app; this file only calls app.Main.
package main

import (
	"os"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

func main() { os.Exit(app.Main()) }
