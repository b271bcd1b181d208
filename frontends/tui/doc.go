// Package tui owns the terminal UI of runner-manager: a live view of the
// host's memory and admission, its policies and their runner attempts, with
// a detail view per attempt and the few edits an operator makes at a glance
// (pause or resume a policy, change its max, stop an attempt).
//
// It has three parts, so each can be tested on its own:
//
//   - the model: plain data (Model), changed only by Update(model, event),
//     which returns the Commands the loop must run (fetch figures, edit a
//     policy, stop an attempt). It imports no terminal library.
//   - the view: Draw(canvas, model) paints a Model on a Canvas, a small
//     interface a tcell screen and the in-memory TextCanvas both satisfy.
//   - the loop (RunScreen): the only code that touches the terminal. One
//     goroutine owns the model and selects over screen events, command
//     results, a redraw tick and the context; redraws are coalesced.
//
// The model and the view are split by pane, one file each holding the
// pane's part of the Model, its handling and its drawing: header.go,
// policies.go, attempts.go, detail.go and statusline.go; table.go is what
// the two tables share. Every key is a row of one table (keys.go), which
// the key handling, the help screen and the status line's hints read.
//
// Data comes through Source: StoreSource implements it over a journal
// (store.Store) and a few functions the caller wires in (the daemon's live
// figures, stopping an attempt); DaemonSource wires those to a running
// daemon's local API. Main, the runner-manager-tui program, takes the
// journal's opener from its caller (OpenStore): OpenSQLite opens SQLite
// journals only, so the program links no PostgreSQL driver.
package tui
