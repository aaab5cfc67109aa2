package api

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
	"chargeonce/internal/idemkey"
)

func TestIdempotencyKey_IsOneStructuredFieldString(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		// key is the key read; empty means the header is refused.
		key string
	}{
		{"a UUID", []string{`"01a2350a-1c4e-7b2f-9a51-3c1e0f6d2b90"`}, "01a2350a-1c4e-7b2f-9a51-3c1e0f6d2b90"},
		{"any printable text", []string{`"order 1001: refund #2"`}, "order 1001: refund #2"},
		{"escapes", []string{`"say \"hi\" \\"`}, `say "hi" \`},
		{"parameters are ignored", []string{`"abc";v=1`}, "abc"},
		{"the longest", []string{`"` + strings.Repeat("k", idemkey.MaxLength) + `"`}, strings.Repeat("k", idemkey.MaxLength)},
		{"none", nil, ""},
		{"empty", []string{""}, ""},
		{"an empty string", []string{`""`}, ""},
		{"a bare token", []string{"01a2350a-1c4e-7b2f-9a51-3c1e0f6d2b90"}, ""},
		{"a bare word", []string{"abc"}, ""},
		{"an integer", []string{"42"}, ""},
		{"a byte sequence", []string{":YWJj:"}, ""},
		{"a list of two", []string{`"a", "b"`}, ""},
		{"two headers", []string{`"a"`, `"b"`}, ""},
		{"unterminated", []string{`"abc`}, ""},
		{"too long", []string{`"` + strings.Repeat("k", idemkey.MaxLength+1) + `"`}, ""},
		{"not ASCII", []string{`"anahtar-ş"`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/orders/1001/refunds", nil)
			for _, v := range tc.values {
				r.Header.Add(idemkey.Header, v)
			}
			key, err := idempotencyKey(r)
			if tc.key != "" {
				require.NoError(t, err)
				require.Equal(t, tc.key, key)
				return
			}
			var pe *problemError
			require.True(t, errors.As(err, &pe), "error %v", err)
			require.Equal(t, wire.ProblemIdempotencyKeyRequired, pe.typ)
			require.Contains(t, pe.detail, idemkey.Example, "the problem names the form")
		})
	}
}
