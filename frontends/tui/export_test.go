package tui

import (
	"context"
	"time"

	"github.com/gdamore/tcell/v2"
)

// Translate is translate, for the black-box tests.
var Translate = translate

// Loop is the loop, stepped by the smoke test.
type Loop = loop

// NewLoop starts a loop on screen without running it: the test steps it.
func NewLoop(ctx context.Context, screen tcell.Screen, src Source, opt Options) *Loop {
	return newLoop(ctx, screen, src, opt)
}

// Step runs one step of the loop.
func (l *loop) Step(ctx context.Context) bool { return l.step(ctx) }

// Stop ends the loop's goroutines.
func (l *loop) Stop() { l.stop() }

// Model returns the loop's model.
func (l *loop) Model() Model { return l.model }

// WithDraw replaces the view the loop draws with.
func WithDraw(o Options, draw func(Canvas, Model)) Options {
	o.draw = draw
	return o
}

// SetStopGrace changes how long quitting waits for queued changes, until
// the returned function restores it.
func SetStopGrace(d time.Duration) (restore func()) {
	old := stopGrace
	stopGrace = d
	return func() { stopGrace = old }
}

// Binding is one row of the keys table, for the table test.
type Binding struct {
	Name, Label, Help, Hint string
	Keys                    []Key
	Global                  bool
	Do                      func(Model) (Model, []Command)
}

// Bindings returns the keys table, in its order.
func Bindings() []Binding {
	out := make([]Binding, 0, len(keys))
	for _, b := range keys {
		out = append(out, Binding{Name: b.name, Label: b.label, Help: b.help, Hint: b.hint, Keys: b.keys(), Global: b.global, Do: b.do})
	}
	return out
}

// HelpLines are the help screen's lines.
func HelpLines() []string { return helpLines(Look{}) }

// ListHints and DetailHints name the bindings the status line hints at.
var ListHints, DetailHints = listHints, detailHints

// PressKey is the key handling alone, without the rest of Update.
func PressKey(m Model, k Key) (Model, []Command) { return m.key(k) }
