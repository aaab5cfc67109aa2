package api

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
)

func TestIdempotencyKey_OneHeaderOfPrintableASCIIWithoutSpaces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		ok     bool
	}{
		{"a UUID", []string{"01a2350a-1c4e-7b2f-9a51-3c1e0f6d2b90"}, true},
		{"any printable token", []string{"order-1001:refund#2"}, true},
		{"the longest", []string{strings.Repeat("k", maxIdempotencyKeyLength)}, true},
		{"none", nil, false},
		{"empty", []string{""}, false},
		{"two", []string{"a", "b"}, false},
		{"too long", []string{strings.Repeat("k", maxIdempotencyKeyLength+1)}, false},
		{"a space", []string{"a b"}, false},
		{"not ASCII", []string{"anahtar-ş"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/orders/1001/refunds", nil)
			for _, v := range tc.values {
				r.Header.Add(headerIdempotencyKey, v)
			}
			key, err := idempotencyKey(r)
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, tc.values[0], key)
				return
			}
			var pe *problemError
			require.True(t, errors.As(err, &pe), "error %v", err)
			require.Equal(t, wire.ProblemIdempotencyKeyRequired, pe.typ)
		})
	}
}
