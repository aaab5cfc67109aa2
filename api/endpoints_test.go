package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/docs"
	"chargeonce/notify"
	"chargeonce/store"
)

// requireBadRequest checks that err is a 400 whose detail names want.
func requireBadRequest(t *testing.T, err error, want string) {
	t.Helper()
	var pe *problemError
	require.True(t, errors.As(err, &pe), "error %v", err)
	require.Equal(t, wire.ProblemInvalidRequest, pe.typ)
	require.Contains(t, pe.detail, want)
}

func TestValidateEndpointURL_HTTPSToPublicHostsHTTPOnlyToLoopbackInternalOnlyWhereAllowed(t *testing.T) {
	for _, ok := range []string{
		"https://shop.example/chargeonce-events",
		"https://shop.example:8443/hooks?source=chargeonce",
		"https://8.8.8.8/hooks",
		"https://[2606:4700:4700::1111]/hooks",
		"https://shop.example/" + strings.Repeat("a", maxEndpointURLBytes-len("https://shop.example/")),
	} {
		require.NoError(t, validateEndpointURL(ok, nil), ok)
	}
	for _, ok := range []string{
		"http://localhost:8097/events",
		"http://LOCALHOST/events",
		"http://127.0.0.1:8097/events",
		"http://127.8.9.10/events",
		"http://[::1]:8097/events",
		"https://127.0.0.1:8443/events",
	} {
		require.NoError(t, validateEndpointURL(ok, notify.LoopbackNetworks), "%s, with loopback allowed", ok)
		requireBadRequest(t, validateEndpointURL(ok, nil), "loopback address")
	}
	for _, tc := range []struct{ url, want string }{
		{"", "is required"},
		{"shop.example/hooks", "absolute https URL"},
		{"/hooks", "absolute https URL"},
		{"https://", "absolute https URL"},
		{"https:shop.example", "absolute https URL"},
		{"https://:443/hooks", "absolute https URL"},
		{"http://shop.example/hooks", "not a loopback host"},
		{"http://10.0.0.1/hooks", "not a loopback host"},
		{"http://localhost.shop.example/hooks", "not a loopback host"},
		{"ftp://shop.example/hooks", `the scheme "ftp"`},
		{"https://user:pw@shop.example/hooks", "user name or password"},
		{"https://user@shop.example/hooks", "user name or password"},
		{"https://shop.example/hooks#part", "#fragment"},
		{"https://shop.example/hooks#", "#fragment"},
		{"https://shop.example:port/hooks", "not a URL"},
		{"https://shop.example/\u202ehooks", "format character"},
		{"https://shop.example/" + strings.Repeat("a", maxEndpointURLBytes), "at most 2048"},
		{"https://169.254.169.254/", "169.254.169.254 is a link-local address"},
		{"https://10.0.0.1/", "10.0.0.1 is a private address"},
		{"https://[::ffff:169.254.169.254]/", "169.254.169.254 is a link-local address"},
		{"https://2130706433/", "has the host 2130706433, which is an IPv4 address written in another form"},
		{"https://0177.0.0.1/", "has the host 0177.0.0.1, which is an IPv4 address written in another form"},
	} {
		requireBadRequest(t, validateEndpointURL(tc.url, notify.LoopbackNetworks), tc.want)
	}
}

func TestParseEventTypes_KnownTypesEachOnceAndNoneMeansAll(t *testing.T) {
	types, err := parseEventTypes(nil)
	require.NoError(t, err)
	require.Empty(t, types)

	all := make([]string, 0, len(chargeonce.EventTypes()))
	for _, ty := range chargeonce.EventTypes() {
		all = append(all, string(ty))
	}
	types, err = parseEventTypes(all)
	require.NoError(t, err)
	require.Equal(t, chargeonce.EventTypes(), types)

	_, err = parseEventTypes([]string{"payment.succeeded", "payment.refunded"})
	requireBadRequest(t, err, `item 2 is "payment.refunded", not an event type: payment.succeeded, payment.declined`)
	_, err = parseEventTypes([]string{"Payment.Succeeded"})
	requireBadRequest(t, err, "not an event type")
	_, err = parseEventTypes([]string{"refund.failed", "payment.declined", "refund.failed"})
	requireBadRequest(t, err, `lists "refund.failed" twice`)
}

func TestParseKeepPrevious_ADurationUpToThirtyDaysWithADayByDefault(t *testing.T) {
	for raw, want := range map[string]time.Duration{"": 24 * time.Hour, "0s": 0, "90m": 90 * time.Minute, "720h": maxKeepPrevious} {
		got, err := parseKeepPrevious(raw)
		require.NoError(t, err, raw)
		require.Equal(t, want, got, raw)
	}
	for _, raw := range []string{"-1s", "720h1s", "1 day", "24", "forever"} {
		_, err := parseKeepPrevious(raw)
		requireBadRequest(t, err, `to "720h", such as "24h"`)
	}
}

// TestDeliveryFailures_AreTheDocuments keeps the Delivery schema's failure
// enum equal to the classes the store keeps.
func TestDeliveryFailures_AreTheDocuments(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []any `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(docs.OpenAPI, &doc))
	want := []any{nil}
	for _, f := range store.DeliveryFailures() {
		want = append(want, string(f))
	}
	require.ElementsMatch(t, want, doc.Components.Schemas["Delivery"].Properties["failure"].Enum)
}
