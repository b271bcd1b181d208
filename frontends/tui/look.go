package tui

import (
	"strings"
)

// Look is how the screen is drawn for a terminal that shows no colour or
// no box-drawing glyphs. The zero Look is colour and Unicode. Every
// distinction the view makes in colour it also makes in words or a
// marker, so a screen drawn without colour loses nothing.
type Look struct {
	// NoColor draws without colours; bold and reverse stay.
	NoColor bool
	// ASCII draws frames, rules, bars, markers and ellipses in ASCII
	// (+ - | = # > ~), and the key hints' glyphs in words.
	ASCII bool
}

// ASCIIEnv is the environment variable that asks for ASCII frames, as
// runner-manager-tui's --ascii does: set to anything but "", "0" or
// "false".
const ASCIIEnv = "RUNNER_MANAGER_TUI_ASCII"

// LookFromEnv is the look the environment asks for: NO_COLOR set and not
// empty (https://no-color.org) drops colour; TERM=dumb drops colour and
// glyphs; ASCIIEnv asks for ASCII.
func LookFromEnv(getenv func(string) string) Look {
	var l Look
	if getenv("NO_COLOR") != "" {
		l.NoColor = true
	}
	if getenv("TERM") == "dumb" {
		l.NoColor, l.ASCII = true, true
	}
	switch strings.ToLower(getenv(ASCIIEnv)) {
	case "", "0", "false", "no":
	default:
		l.ASCII = true
	}
	return l
}

// Or is the look asking for everything l or o asks for.
func (l Look) Or(o Look) Look {
	return Look{NoColor: l.NoColor || o.NoColor, ASCII: l.ASCII || o.ASCII}
}

// lookCanvas draws on c in a Look: colours dropped, glyphs made ASCII.
type lookCanvas struct {
	c    Canvas
	look Look
}

func (l lookCanvas) Size() (int, int) { return l.c.Size() }

func (l lookCanvas) SetContent(x, y int, r rune, st Style) {
	if l.look.NoColor {
		st.FG = ColorDefault
	}
	if l.look.ASCII {
		if a, ok := asciiRunes[r]; ok {
			r = a
		}
	}
	l.c.SetContent(x, y, r, st)
}

// asciiRunes are the view's own glyphs and their ASCII stand-ins, one cell
// for one cell so that nothing moves. Data (a job's name) keeps its runes.
var asciiRunes = map[rune]rune{
	'─': '-', '━': '=', '│': '|', '┌': '+', '┐': '+', '└': '+', '┘': '+',
	'▸': '>', '…': '~', '·': '.', '×': 'x', '–': '-', '▏': '|',
	'←': '<', '→': '>', '↑': '^', '↓': 'v',
	'█': '#', '▓': '=', '░': ':',
	'▁': '_', '▂': '.', '▃': ',', '▄': '-', '▅': '=', '▆': '+', '▇': '*',
}

// asciiWords spells the hints' glyphs that no single ASCII character
// stands for.
var asciiWords = strings.NewReplacer("⏎", "enter", "⌫", "bksp")

// lookText is s as the look draws it: with the glyphs of key hints in
// words under ASCII.
func lookText(l Look, s string) string {
	if l.ASCII {
		return asciiWords.Replace(s)
	}
	return s
}
