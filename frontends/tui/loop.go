package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/gdamore/tcell/v2/terminfo"

	"github.com/runner-manager/runner-manager/logredact"
)

// Options tune the loop; the zero value gives the defaults.
type Options struct {
	// Tick is how often the figures are read and the screen redrawn
	// (default 1 s).
	Tick time.Duration
	// Timeout bounds each call to the Source (default 10 s).
	Timeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Notice, if set, is asked on each tick for the program's standing
	// word (Notice); it runs on the UI's goroutine, so it must be quick.
	Notice func() string
	// Look is how to draw, beside what the environment asks for
	// (LookFromEnv: NO_COLOR, TERM=dumb, RUNNER_MANAGER_TUI_ASCII).
	Look Look
	// Out receives, once the terminal is given back, the view the user
	// asked to copy (the copy key: Model.Printout); default os.Stdout.
	Out io.Writer

	draw func(Canvas, Model) // tests replace the view
}

func (o Options) withDefaults() Options {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.draw == nil {
		o.draw = Draw
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// Run takes over the terminal and shows src until the user quits or ctx
// ends, then gives the terminal back as it found it.
func Run(ctx context.Context, src Source, opt Options) error {
	screen, err := newScreen(os.Getenv)
	if err != nil {
		return fmt.Errorf("open the terminal: %w (the TUI needs an interactive terminal; use `runner-manager status` otherwise)", err)
	}
	if err := screen.Init(); err != nil {
		return fmt.Errorf("set up the terminal: %w (the TUI needs an interactive terminal; use `runner-manager status` otherwise)", err)
	}
	return RunScreen(ctx, screen, src, opt)
}

// newScreen opens the terminal. TERM=dumb has no terminfo entry that
// places the cursor, which tcell needs: it is driven as a VT100 instead
// (cursor addressing, no colour), and LookFromEnv draws it without colour
// or glyphs.
func newScreen(getenv func(string) string) (tcell.Screen, error) {
	if getenv("TERM") == "dumb" && runtime.GOOS != "windows" {
		if ti, err := terminfo.LookupTerminfo("vt100"); err == nil {
			return tcell.NewTerminfoScreenFromTtyTerminfo(nil, ti)
		}
	}
	return tcell.NewScreen()
}

// RunScreen runs the UI on an initialized screen until the user quits or
// ctx ends, and finalizes the screen when it returns, also when it panics
// (the panic goes on once the terminal is restored).
func RunScreen(ctx context.Context, screen tcell.Screen, src Source, opt Options) error {
	l := newLoop(ctx, screen, src, opt)
	defer func() {
		if r := recover(); r != nil {
			l.stop()
			screen.Fini()
			panic(r)
		}
	}()
	for !l.step(ctx) {
	}
	l.stop()
	screen.Fini()
	if lines := l.model.Printout; len(lines) > 0 {
		// Printed after Fini, on the terminal's normal screen, where its
		// selection and scrollback copy it.
		// Notes and errors may echo a credential: the last line holds.
		if _, err := io.WriteString(l.opt.Out, logredact.String(strings.Join(lines, "\n")+"\n")); err != nil {
			return fmt.Errorf("print the view: %w", err)
		}
	}
	return nil
}

// loop is the only code that touches the screen. One goroutine (the one
// calling step) owns the model; Source calls run on other goroutines and
// come back as events.
type loop struct {
	screen tcell.Screen
	src    Source
	opt    Options
	model  Model

	events     chan tcell.Event // from the screen
	stopEvents chan struct{}
	results    chan Event // from Source calls
	redraw     chan struct{}
	mutations  chan Command // run one at a time, in order
	workerDone chan struct{}
	done       chan struct{} // closed by stop
	ticker     *time.Ticker
	ctx        context.Context // Source calls; cancelled by stop
	cancel     context.CancelFunc
	syncNext   bool
	stopOnce   sync.Once
}

func newLoop(ctx context.Context, screen tcell.Screen, src Source, opt Options) *loop {
	opt = opt.withDefaults()
	l := &loop{
		screen:     screen,
		src:        src,
		opt:        opt,
		events:     make(chan tcell.Event, 16),
		stopEvents: make(chan struct{}),
		results:    make(chan Event, 16),
		redraw:     make(chan struct{}, 1),
		mutations:  make(chan Command, 32),
		workerDone: make(chan struct{}),
		done:       make(chan struct{}),
		ticker:     time.NewTicker(opt.Tick),
	}
	// Source calls outlive a cancelled ctx only as long as their timeout:
	// a stop asked for just before quitting still reaches the daemon.
	l.ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	screen.HideCursor()
	go screen.ChannelEvents(l.events, l.stopEvents)
	go l.worker()
	w, h := screen.Size()
	l.model = NewModel(w, h, opt.Now())
	l.model.Look = LookFromEnv(os.Getenv).Or(opt.Look)
	l.apply(Tick{}) // the first reads
	return l
}

// step waits for one thing to happen, handles it, and draws if anything
// asked for a redraw. It reports whether the loop is over.
func (l *loop) step(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case ev, ok := <-l.events:
		if !ok {
			return true // the screen was finalized
		}
		if e, ok := translate(ev); ok {
			l.apply(e)
		}
	case ev := <-l.results:
		l.apply(ev)
	case <-l.ticker.C:
		l.apply(Tick{})
		if l.opt.Notice != nil {
			if text := l.opt.Notice(); text != l.model.Notice {
				l.apply(Notice{Text: text})
			}
		}
	case <-l.redraw:
		l.paint()
	}
	select {
	case <-l.redraw:
		l.paint()
	default:
	}
	return l.model.Quit
}

func (l *loop) apply(ev Event) {
	l.model.Now = l.opt.Now()
	m, cmds := Update(l.model, ev)
	l.model = m
	for _, c := range cmds {
		l.exec(c)
	}
	l.requestRedraw()
}

// requestRedraw asks for one redraw; requests made before it happens are
// one redraw.
func (l *loop) requestRedraw() {
	select {
	case l.redraw <- struct{}{}:
	default:
	}
}

func (l *loop) paint() {
	l.opt.draw(screenCanvas{l.screen}, l.model)
	if l.syncNext {
		l.syncNext = false
		l.screen.Sync()
		return
	}
	l.screen.Show()
}

func (l *loop) exec(c Command) {
	switch c := c.(type) {
	case Quit:
	case Sync:
		l.syncNext = true
	case FetchStatus:
		go l.call(func(ctx context.Context) Event {
			st, err := l.src.Status(ctx)
			return StatusLoaded{Status: st, Err: err}
		})
	case FetchAttempts:
		go l.call(func(ctx context.Context) Event {
			as, err := l.src.Attempts(ctx, c.Filter)
			ev := AttemptsLoaded{Attempts: as, Err: err}
			if h, ok := l.src.(PolicyHistory); ok && err == nil {
				// Without them, a removed policy's attempts show its id.
				ev.Policies, _ = h.Policies(ctx)
			}
			return ev
		})
	case FetchLog:
		go l.call(func(ctx context.Context) Event {
			lines, err := l.src.LogTail(ctx, c.ID, c.Lines)
			return LogLoaded{ID: c.ID, Lines: lines, Err: err}
		})
	default:
		if !Mutation(c) {
			panic(fmt.Sprintf("tui: no way to run command %T", c))
		}
		select {
		case l.mutations <- c:
		default:
			go l.send(Done{Cmd: c, Err: errors.New("too many changes waiting: try again in a moment")})
		}
	}
}

// call runs one Source call with a timeout and posts its result.
func (l *loop) call(f func(context.Context) Event) {
	ctx, cancel := context.WithTimeout(l.ctx, l.opt.Timeout)
	defer cancel()
	l.send(f(ctx))
}

func (l *loop) send(ev Event) {
	select {
	case l.results <- ev:
	case <-l.done:
	}
}

// worker runs the changes one at a time, so that "+" pressed twice sets
// the max twice in that order.
func (l *loop) worker() {
	defer close(l.workerDone)
	for c := range l.mutations {
		l.call(func(ctx context.Context) Event {
			var err error
			switch c := c.(type) {
			case SetPaused:
				err = l.src.SetPaused(ctx, c.Policy, c.Paused)
			case SetMax:
				err = l.src.SetMax(ctx, c.Policy, c.Max)
			case StopAttempt:
				err = l.src.StopAttempt(ctx, c.ID)
			}
			return Done{Cmd: c, Err: err}
		})
	}
}

// stopGrace bounds how long quitting waits for changes already asked for.
var stopGrace = 3 * time.Second

// stop ends the loop's goroutines. Changes already queued get a short
// grace to reach the source; reads in flight are cancelled.
func (l *loop) stop() {
	l.stopOnce.Do(func() {
		l.ticker.Stop()
		close(l.done)
		close(l.stopEvents)
		close(l.mutations)
		t := time.NewTimer(stopGrace)
		select {
		case <-l.workerDone:
		case <-t.C:
		}
		t.Stop()
		l.cancel()
	})
}

// screenCanvas draws the view on a tcell screen.
type screenCanvas struct{ s tcell.Screen }

var _ Canvas = screenCanvas{}

func (c screenCanvas) Size() (int, int) { return c.s.Size() }

func (c screenCanvas) SetContent(x, y int, r rune, st Style) {
	c.s.SetContent(x, y, r, nil, tcellStyle(st))
}

// tcellColors maps the view's colors to the terminal's.
var tcellColors = map[Color]tcell.Color{
	ColorDefault: tcell.ColorDefault, ColorRed: tcell.ColorRed, ColorGreen: tcell.ColorGreen,
	ColorYellow: tcell.ColorYellow, ColorBlue: tcell.ColorBlue, ColorCyan: tcell.ColorTeal, ColorGray: tcell.ColorGray,
}

func tcellStyle(s Style) tcell.Style {
	return tcell.StyleDefault.Foreground(tcellColors[s.FG]).Bold(s.Bold).Dim(s.Dim).Reverse(s.Reverse)
}

// keyCodes maps tcell's keys to the UI's. Control keys come as KeyCtrlX
// from a terminal and as their ASCII code (KeyETX...) from injected bytes:
// both are mapped.
var keyCodes = map[tcell.Key]KeyCode{
	tcell.KeyUp: KeyUp, tcell.KeyDown: KeyDown, tcell.KeyLeft: KeyLeft, tcell.KeyRight: KeyRight,
	tcell.KeyPgUp: KeyPgUp, tcell.KeyPgDn: KeyPgDn, tcell.KeyHome: KeyHome, tcell.KeyEnd: KeyEnd,
	tcell.KeyEnter: KeyEnter, tcell.KeyLF: KeyEnter, tcell.KeyCtrlJ: KeyEnter, tcell.KeyEsc: KeyEsc,
	tcell.KeyBackspace: KeyBackspace, tcell.KeyBackspace2: KeyBackspace,
	tcell.KeyTab: KeyTab, tcell.KeyBacktab: KeyBacktab,
	tcell.KeyCtrlC: KeyCtrlC, tcell.KeyETX: KeyCtrlC,
	tcell.KeyCtrlL: KeyCtrlL, tcell.KeyFF: KeyCtrlL,
}

// translate turns a terminal event into the UI's own, or reports false for
// one the UI ignores.
func translate(ev tcell.Event) (Event, bool) {
	switch ev := ev.(type) {
	case *tcell.EventResize:
		w, h := ev.Size()
		return Resize{Width: w, Height: h}, true
	case *tcell.EventKey:
		if ev.Key() == tcell.KeyRune {
			if ev.Modifiers()&(tcell.ModAlt|tcell.ModCtrl|tcell.ModMeta) != 0 {
				return nil, false
			}
			return Key{Code: KeyRune, Rune: ev.Rune()}, true
		}
		if c, ok := keyCodes[ev.Key()]; ok {
			return Key{Code: c}, true
		}
	}
	return nil, false
}
