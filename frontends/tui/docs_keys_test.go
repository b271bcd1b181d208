package tui_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/tui"
)

// docKeyNames are how docs/tui.md writes the special keys.
var docKeyNames = map[string]tui.KeyCode{
	"↑": tui.KeyUp, "↓": tui.KeyDown, "←": tui.KeyLeft, "→": tui.KeyRight,
	"PgUp": tui.KeyPgUp, "PgDn": tui.KeyPgDn, "Home": tui.KeyHome, "End": tui.KeyEnd,
	"enter": tui.KeyEnter, "esc": tui.KeyEsc, "backspace": tui.KeyBackspace,
	"tab": tui.KeyTab, "shift-tab": tui.KeyBacktab, "ctrl-c": tui.KeyCtrlC, "ctrl-l": tui.KeyCtrlL,
}

// TestDocsListEveryKey: the keys table of docs/tui.md names every key the
// UI binds, and no key it does not (the `i` and `s` keys were missing).
func TestDocsListEveryKey(t *testing.T) {
	raw, err := os.ReadFile("../../docs/tui.md")
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, "| key | does |")
	require.GreaterOrEqual(t, start, 0, "docs/tui.md has a keys table")
	documented := map[tui.Key]bool{}
	for _, line := range strings.Split(doc[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		require.GreaterOrEqual(t, len(cells), 3, line)
		for _, tok := range strings.Fields(strings.ReplaceAll(cells[1], ",", " ")) {
			var k tui.Key
			if code, ok := docKeyNames[tok]; ok {
				k = tui.Key{Code: code}
			} else {
				r := []rune(tok)
				require.Len(t, r, 1, "docs/tui.md names a key it is not known how to read: %q", tok)
				k = tui.Key{Code: tui.KeyRune, Rune: r[0]}
			}
			documented[k] = true
		}
	}
	var bound []tui.Key
	for _, b := range tui.Bindings() {
		for _, k := range b.Keys {
			bound = append(bound, k)
			assert.True(t, documented[k], "docs/tui.md does not list %s (%s)", keyName(k), b.Name)
		}
	}
	for k := range documented {
		assert.True(t, slices.Contains(bound, k), "docs/tui.md lists %s, which no binding has", keyName(k))
	}
}
