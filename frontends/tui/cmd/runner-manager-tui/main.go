// Command runner-manager-tui is the terminal UI of runner-manager on its
// own (the same as `runner-manager tui`): a live view of the host's
// policies and runner attempts beside a running daemon.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/runner-manager/runner-manager/frontends/tui"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := tui.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, tui.OpenSQLite)
	stop()
	os.Exit(code)
}
