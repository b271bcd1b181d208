package runnermanager_test

import (
	"database/sql/driver"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

func TestIDNew(t *testing.T) {
	seen := map[rm.AttemptID]bool{}
	for range 1000 {
		id := rm.NewAttemptID()
		require.False(t, id.IsZero())
		require.False(t, seen[id], "ids repeat")
		seen[id] = true
		s := id.String()
		require.Len(t, s, 26)
		require.Equal(t, strings.ToLower(s), s)
		require.NotContainsf(t, s, "/", "ids go in paths")
	}
	assert.False(t, rm.NewHostID().IsZero())
	assert.False(t, rm.NewPolicyID().IsZero())
}

func TestIDRoundTrip(t *testing.T) {
	h, p, a := rm.NewHostID(), rm.NewPolicyID(), rm.NewAttemptID()
	gh, err := rm.ParseHostID(h.String())
	require.NoError(t, err)
	assert.Equal(t, h, gh)
	gp, err := rm.ParsePolicyID(p.String())
	require.NoError(t, err)
	assert.Equal(t, p, gp)
	ga, err := rm.ParseAttemptID(a.String())
	require.NoError(t, err)
	assert.Equal(t, a, ga)

	upper, err := rm.ParseAttemptID(strings.ToUpper(a.String()))
	require.NoError(t, err, "a user may type an id in capitals")
	assert.Equal(t, a, upper)
}

func TestIDZero(t *testing.T) {
	var a rm.AttemptID
	assert.True(t, a.IsZero())
	assert.Equal(t, "", a.String())
	got, err := rm.ParseAttemptID("")
	require.NoError(t, err)
	assert.True(t, got.IsZero())
	v, err := a.Value()
	require.NoError(t, err)
	assert.Nil(t, v, "the zero id is NULL in SQL")
}

func TestIDParseErrors(t *testing.T) {
	valid := rm.NewAttemptID().String()
	// The last character carries 3 bits: "0" and "1" differ in an unused one.
	last := valid[:25] + "0"
	other := valid[:25] + "1"
	tests := map[string]string{
		"Short":        valid[:25],
		"Long":         valid + "0",
		"Alphabet":     "u" + valid[1:], // u is not in the alphabet
		"Punctuation":  valid[:10] + "-" + valid[11:],
		"Space":        " " + valid[1:],
		"NonCanonical": other,
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := rm.ParseAttemptID(s)
			require.ErrorIs(t, err, rm.ErrInvalid)
			assert.Contains(t, err.Error(), "attempt id")
			assert.Contains(t, err.Error(), s)
		})
	}
	_, err := rm.ParseAttemptID(last)
	require.NoError(t, err)

	// The messages read as English and never offer an empty hint.
	for _, tc := range []struct{ in, want string }{
		{"nope", `"nope" is not an attempt id (26 letters and digits)`},
		{other, `is not an attempt id (did you mean ` + last + `?)`},
		{"00000000000000000000000001", `"00000000000000000000000001" is not an attempt id (all zeros means none)`},
		{"00000000000000000000000000", `is not an attempt id (all zeros means none)`},
	} {
		_, err := rm.ParseAttemptID(tc.in)
		require.ErrorContains(t, err, tc.want)
		assert.NotContains(t, err.Error(), "mean ?")
	}

	_, err = rm.ParsePolicyID("nope")
	require.ErrorContains(t, err, `"nope" is not a policy id`)
	_, err = rm.ParseHostID("nope")
	require.ErrorContains(t, err, `"nope" is not a host id`)
}

func TestIDMapKeyAndText(t *testing.T) {
	a, b := rm.NewAttemptID(), rm.NewAttemptID()
	m := map[rm.AttemptID]int{a: 1, b: 2}
	again, err := rm.ParseAttemptID(a.String())
	require.NoError(t, err)
	assert.Equal(t, 1, m[again], "a parsed id finds its map entry")

	text, err := a.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, a.String(), string(text))

	// JSON: as a value and as a map key, through the text methods.
	type doc struct {
		ID     rm.AttemptID
		Policy rm.PolicyID
		Host   rm.HostID
		Peaks  map[rm.AttemptID]int
	}
	in := doc{ID: a, Policy: rm.NewPolicyID(), Peaks: m}
	js, err := json.Marshal(in)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"ID":"`+a.String()+`"`)
	assert.Contains(t, string(js), `"Host":""`, "the zero id is empty text")
	var out doc
	require.NoError(t, json.Unmarshal(js, &out))
	assert.Equal(t, in, out)

	var bad rm.PolicyID
	require.ErrorIs(t, bad.UnmarshalText([]byte("x")), rm.ErrInvalid)
}

func TestIDSQL(t *testing.T) {
	a := rm.NewAttemptID()
	v, err := a.Value()
	require.NoError(t, err)
	assert.Equal(t, driver.Value(a.String()), v)

	tests := map[string]struct {
		src     any
		want    rm.AttemptID
		wantErr bool
	}{
		"String": {src: a.String(), want: a},
		"Bytes":  {src: []byte(a.String()), want: a},
		"Null":   {src: nil},
		"Bad":    {src: "bad", wantErr: true},
		"Int":    {src: int64(7), wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := rm.NewAttemptID() // scanning overwrites
			err := got.Scan(tt.src)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	var h rm.HostID
	require.NoError(t, h.Scan(nil))
	var p rm.PolicyID
	require.ErrorContains(t, p.Scan(3.5), "policy id")
}
