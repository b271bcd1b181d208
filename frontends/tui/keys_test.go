package tui_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/tui"
)

func keyName(k tui.Key) string {
	if k.Code == tui.KeyRune {
		return fmt.Sprintf("%q", k.Rune)
	}
	return fmt.Sprintf("code%d", k.Code)
}

// TestKeyTable checks the table itself: every key bound once, every
// binding reachable, the help screen and the hints made of its rows.
func TestKeyTable(t *testing.T) {
	bindings := tui.Bindings()
	byName := map[string]tui.Binding{}
	boundTo := map[tui.Key]string{}
	var wantHelp []string
	for _, b := range bindings {
		require.NotEmpty(t, b.Name)
		require.NotContains(t, byName, b.Name, "two bindings named %s", b.Name)
		byName[b.Name] = b
		assert.NotNil(t, b.Do, b.Name)
		assert.NotEmpty(t, b.Keys, "%s: no key runs it", b.Name)
		for _, k := range b.Keys {
			if other, dup := boundTo[k]; dup {
				t.Errorf("%s is bound to both %s and %s", keyName(k), other, b.Name)
			}
			boundTo[k] = b.Name
		}
		if b.Help != "" {
			assert.NotEmpty(t, b.Label, "%s: a help line names its keys", b.Name)
			assert.Less(t, len([]rune(b.Label)), 13, "%s: the label fits its column", b.Name)
			wantHelp = append(wantHelp, b.Label+strings.Repeat(" ", 13-len([]rune(b.Label)))+b.Help)
		}
	}
	assert.Equal(t, append(wantHelp, "", "any key closes this help"), tui.HelpLines(),
		"the help screen lists the table's help lines, in its order")
	for _, name := range append(append([]string{}, tui.ListHints...), tui.DetailHints...) {
		b, ok := byName[name]
		if assert.True(t, ok, "a hint names no binding: %s", name) {
			assert.NotEmpty(t, b.Hint, "%s is hinted at but has no hint", name)
		}
	}
}

// TestKeysRunTheirAction checks that each key of the table runs its
// binding's action, in each view.
func TestKeysRunTheirAction(t *testing.T) {
	views := map[string]func() tui.Model{
		"attempts": loaded,
		"policies": func() tui.Model { m, _ := send(loaded(), key(tui.KeyTab)); return m },
		"detail":   func() tui.Model { m, _ := send(loaded(), key(tui.KeyEnter)); return m },
	}
	for _, b := range tui.Bindings() {
		for _, k := range b.Keys {
			for view, start := range views {
				t.Run(b.Name+"/"+keyName(k)+"/"+view, func(t *testing.T) {
					want, wantCmds := b.Do(start())
					got, gotCmds := tui.PressKey(start(), k)
					assert.Equal(t, want, got)
					assert.Equal(t, wantCmds, gotCmds)
				})
			}
		}
	}
}

// TestKeysInModes checks the modes that take the keys first: only the
// global bindings act over the help, the stop question and the filter
// being typed.
func TestKeysInModes(t *testing.T) {
	modes := []struct {
		name  string
		start func() tui.Model
		check func(t *testing.T, k tui.Key, m tui.Model, cmds []tui.Command)
	}{
		{"help", func() tui.Model { m, _ := send(loaded(), r('?')); return m },
			func(t *testing.T, _ tui.Key, m tui.Model, cmds []tui.Command) {
				assert.False(t, m.Help, "any key closes the help")
				assert.Empty(t, cmds)
			}},
		{"question", func() tui.Model { m, _ := send(loaded(), r('x')); return m },
			func(t *testing.T, _ tui.Key, m tui.Model, cmds []tui.Command) {
				assert.True(t, m.Confirm.IsZero(), "any key answers")
				assert.Empty(t, cmds, "no bound key is a yes")
				assert.Equal(t, "stop cancelled", m.Msg)
			}},
		{"filter", func() tui.Model { m, _ := send(loaded(), r('/')); return m },
			func(t *testing.T, k tui.Key, m tui.Model, cmds []tui.Command) {
				assert.Empty(t, cmds)
				assert.False(t, m.Quit)
				if k.Code == tui.KeyRune {
					assert.Equal(t, string(k.Rune), m.Draft, "a character is text")
				}
				assert.Equal(t, k.Code != tui.KeyEnter && k.Code != tui.KeyEsc, m.Editing)
			}},
	}
	for _, b := range tui.Bindings() {
		for _, k := range b.Keys {
			for _, mode := range modes {
				t.Run(b.Name+"/"+keyName(k)+"/"+mode.name, func(t *testing.T) {
					got, cmds := tui.PressKey(mode.start(), k)
					if !b.Global {
						mode.check(t, k, got, cmds)
						return
					}
					want, wantCmds := b.Do(mode.start())
					assert.Equal(t, want, got, "a global key acts in every mode")
					assert.Equal(t, wantCmds, cmds)
				})
			}
		}
	}
}
