package idemkey_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/idemkey"
)

func TestParse_TakesAStringAndRefusesEveryOtherForm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		key    string
		err    error
		// tokenToo is what ParseTokenToo reads where it differs.
		tokenToo string
	}{
		{name: "a string", values: []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, key: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{name: "escapes", values: []string{`"a \"b\" \\"`}, key: `a "b" \`},
		{name: "parameters", values: []string{`"abc";v=1`}, key: "abc"},
		{name: "none", err: idemkey.ErrMissing},
		{name: "blank", values: []string{"  "}, err: idemkey.ErrEmpty},
		{name: "empty string", values: []string{`""`}, err: idemkey.ErrEmpty},
		{name: "too long", values: []string{`"` + strings.Repeat("k", idemkey.MaxLength+1) + `"`}, err: idemkey.ErrTooLong},
		{name: "a token", values: []string{"abc"}, err: idemkey.ErrNotString, tokenToo: "abc"},
		{name: "an integer", values: []string{"42"}, err: idemkey.ErrNotString},
		{name: "a list", values: []string{`"a"`, `"b"`}, err: idemkey.ErrNotString},
		{name: "unterminated", values: []string{`"abc`}, err: idemkey.ErrNotString},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := idemkey.Parse(tc.values)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.key, key)

			lenient, err := idemkey.ParseTokenToo(tc.values)
			if tc.tokenToo != "" {
				require.NoError(t, err)
				require.Equal(t, tc.tokenToo, lenient)
			} else {
				require.ErrorIs(t, err, tc.err)
				require.Equal(t, tc.key, lenient)
			}
		})
	}
}

func FuzzFormat_ParseReadsWhatFormatWrites(f *testing.F) {
	for _, seed := range []string{"8e03978e-40d5-43e8-bc93-6894a57f9324", `a "b" \`, "order 1001", "", "ş", strings.Repeat("k", 256)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		sf, err := idemkey.Format(key)
		if err != nil {
			return
		}
		got, err := idemkey.Parse([]string{sf})
		require.NoError(t, err)
		require.Equal(t, key, got)
	})
}
