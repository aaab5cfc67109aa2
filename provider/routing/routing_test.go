package routing_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/internal/webhook"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
)

// twoProviders is a valid file: alpha takes TRY first, beta takes every
// EUR and the large TRY payments.
const twoProviders = `
currencies: [TRY, EUR]
providers:
  - name: alpha
    dialect: ietf
    url: http://127.0.0.1:8099
    webhook_secrets_file: alpha.whsec
  - name: beta
    dialect: stripe
    url: http://127.0.0.1:12111
    api_key_file: beta.key
    search_delay: 0s
    timeout: 5s
rules:
  - currencies: [TRY]
    max_amount: 100000
    providers: [alpha, beta]
  - currencies: [TRY]
    min_amount: 100001
    providers: [beta, alpha]
  - currencies: [EUR]
    providers: [alpha, beta]
    weights: [1, 3]
`

// write writes the file and its secrets into a directory and returns the
// file's path.
func write(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"routing.yaml": content,
		"alpha.whsec":  webhook.NewSecret() + "\n" + webhook.NewSecret() + "\n",
		"beta.key":     "sk_test_123\n",
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	return filepath.Join(dir, "routing.yaml")
}

func money(t *testing.T, minor int64, currency string) chargeonce.Money {
	t.Helper()
	m, err := chargeonce.NewMoney(minor, currency)
	require.NoError(t, err)
	return m
}

func TestLoad_ReadsProvidersAndRoutesByCurrencyAndAmount(t *testing.T) {
	table, err := routing.Load(write(t, twoProviders))
	require.NoError(t, err)

	ps := table.Providers()
	require.Len(t, ps, 2)
	require.Equal(t, "alpha", ps[0].Name)
	require.Equal(t, "ietf", ps[0].API)
	require.Len(t, ps[0].WebhookSecrets, 2, "one secret a line of the secrets file")
	require.Equal(t, "stripe", ps[1].API)
	require.Equal(t, "sk_test_123", ps[1].StripeAPIKey)
	require.Zero(t, ps[1].StripeLookupDelay)
	require.Equal(t, "5s", ps[1].Timeout.String())
	require.Equal(t, "alpha", table.Default())
	require.Equal(t, []dialect.Settings{ps[0].Settings, ps[1].Settings}, table.Settings(), "the settings a registry is built from, the default first")

	small, err := table.Route(1, money(t, 100000, "TRY"))
	require.NoError(t, err)
	require.Equal(t, []string{"alpha", "beta"}, small.Providers)
	require.Equal(t, "rule 1 (line 15)", small.Why)

	large, err := table.Route(1, money(t, 100001, "TRY"))
	require.NoError(t, err)
	require.Equal(t, []string{"beta", "alpha"}, large.Providers)

	_, err = table.Route(1, money(t, 500, "USD"))
	var noRoute *routing.NoRouteError
	require.ErrorAs(t, err, &noRoute)
	require.Equal(t, money(t, 500, "USD"), noRoute.Amount)
	require.EqualError(t, err, "no routing rule covers a payment of USD 5.00")
}

func TestRoute_WeightsSplitTheFirstChoiceTheSameWayForAnOrder(t *testing.T) {
	table, err := routing.Load(write(t, twoProviders))
	require.NoError(t, err)
	first := map[string]int{}
	for order := range int64(4000) {
		r, err := table.Route(order+1, money(t, 500, "EUR"))
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"alpha", "beta"}, r.Providers, "the other provider follows as the fallback")
		first[r.Providers[0]]++
		again, err := table.Route(order+1, money(t, 500, "EUR"))
		require.NoError(t, err)
		require.Equal(t, r.Providers, again.Providers, "one order, one first choice")
	}
	// 1:3 of 4000 is 1000 and 3000; a fair hash stays well within 10%.
	require.InDelta(t, 1000, first["alpha"], 100, "alpha's share: %v", first)
	require.InDelta(t, 3000, first["beta"], 100, "beta's share: %v", first)
}

func TestOf_RoutesEveryPaymentToItsProvidersInOrder(t *testing.T) {
	r, err := routing.Of(routing.Provider{}).Route(7, money(t, 1, "JPY"))
	require.NoError(t, err)
	require.Equal(t, []string{chargeonce.DefaultProvider}, r.Providers)
	require.Equal(t, "the only provider", r.Why)

	b := routing.Provider{}
	b.Name = "b"
	r, err = routing.Of(routing.Provider{}, b).Route(7, money(t, 1, "JPY"))
	require.NoError(t, err)
	require.Equal(t, []string{chargeonce.DefaultProvider, "b"}, r.Providers)
	require.Equal(t, "the providers in their order", r.Why)
}

func TestLoad_AFileWithoutRulesTriesItsProvidersInOrder(t *testing.T) {
	table, err := routing.Load(write(t, "providers:\n  - {name: a, dialect: ietf, url: 'http://127.0.0.1:1'}\n  - {name: b, dialect: ietf, url: 'http://127.0.0.1:2'}\n"))
	require.NoError(t, err)
	r, err := table.Route(7, money(t, 1, "EUR"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, r.Providers)
}

// TestLoad_RefusesBadFiles checks that each bad file is refused with the
// file, the line and the field.
func TestLoad_RefusesBadFiles(t *testing.T) {
	provider := func(extra string) string {
		return "providers:\n  - name: alpha\n    dialect: ietf\n    url: http://127.0.0.1:8099\n" + extra
	}
	tests := []struct {
		name, file, want string
	}{
		{"empty file", "", ":1: providers: the file is empty"},
		{"no provider", "rules: []\n", ":1: providers: the file lists no provider"},
		{"unknown top-level field", provider("") + "rule: []\n", `:5: field rule not found`},
		{"unknown provider field", provider("    secret: x\n"), `:5: unknown field "secret"`},
		{"unknown dialect", "providers:\n  - name: alpha\n    dialect: adyen\n    url: http://x\n", `:3: providers[0].dialect: unknown API "adyen"`},
		{"missing dialect", "providers:\n  - name: alpha\n    url: http://x\n", `:2: providers[0].dialect: is required`},
		{"bad name", "providers:\n  - name: Alpha\n    dialect: ietf\n", `:2: providers[0].name: provider name "Alpha"`},
		{"duplicate name", provider("  - name: alpha\n    dialect: ietf\n    url: http://127.0.0.1:1\n"), `:5: providers[1].name: "alpha" names two providers`},
		{"stripe without a key", "providers:\n  - name: s\n    dialect: stripe\n", `:2: providers[0].api_key: a Stripe provider needs its secret key`},
		{"stripe key twice", "providers:\n  - name: s\n    dialect: stripe\n    api_key: sk_test_1\n    api_key_file: beta.key\n", `:5: providers[0].api_key_file: give api_key or api_key_file, not both`},
		{"missing key file", "providers:\n  - name: s\n    dialect: stripe\n    api_key_file: nowhere.key\n", `:4: providers[0].api_key_file: open`},
		{"key for ietf", provider("    api_key: sk_test_1\n"), `:5: providers[0].api_key: is for the stripe dialect only`},
		{"bad url", "providers:\n  - name: alpha\n    dialect: ietf\n    url: ftp://x\n", `:4: providers[0].url: config: BaseURL "ftp://x": scheme must be http or https`},
		{"bad timeout", provider("    timeout: -1s\n"), `:5: providers[0].timeout: -1s is not positive`},
		{"unreadable timeout", provider("    timeout: soon\n"), `:5: cannot unmarshal`},
		{"bad secret", provider("    webhook_secrets: [nope]\n"), `:5: providers[0].webhook_secrets: secret 1: webhook: a secret starts with whsec_`},
		{"rule of an unknown provider", provider("rules:\n  - currencies: [TRY]\n    providers: [beta]\n"), `:7: rules[0].providers[0]: "beta" is not one of the file's providers`},
		{"rule of a bad currency", provider("rules:\n  - currencies: [ABC]\n    providers: [alpha]\n"), `:6: rules[0].currencies[0]: invalid currency`},
		{"rule without currencies", provider("rules:\n  - providers: [alpha]\n"), `:6: rules[0].currencies: a rule covers one currency at least`},
		{"zero weight", provider("rules:\n  - currencies: [TRY]\n    providers: [alpha]\n    weights: [0]\n"), `:8: rules[0].weights[0]: 0 is not from 1 to 1000000`},
		{"weights of another length", provider("rules:\n  - currencies: [TRY]\n    providers: [alpha]\n    weights: [1, 2]\n"), `:8: rules[0].weights: 2 weights for 1 providers`},
		{"max below min", provider("rules:\n  - currencies: [TRY]\n    min_amount: 10\n    max_amount: 9\n    providers: [alpha]\n"), `:8: rules[0].max_amount: 9 is below min_amount 10`},
		{"uncovered currency", "currencies: [TRY, EUR]\n" + provider("rules:\n  - currencies: [TRY]\n    providers: [alpha]\n"), `:1: currencies[1]: no rule covers EUR from 1 minor units`},
		{"uncovered amounts", "currencies: [TRY]\n" + provider("rules:\n  - currencies: [TRY]\n    max_amount: 500\n    providers: [alpha]\n  - currencies: [TRY]\n    min_amount: 502\n    providers: [alpha]\n"), `:1: currencies[0]: no rule covers TRY from 501 minor units`},
		{"two documents", provider("---\nproviders: []\n"), `:5: the file holds more than one YAML document`},
		{"not a mapping", "providers:\n  - alpha\n", `:2: want a mapping of fields`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, tt.file)
			_, err := routing.Load(path)
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), "routing file "+path), err.Error())
			require.Contains(t, err.Error(), path+tt.want)
		})
	}
}

func TestLoad_MissingFileIsAnError(t *testing.T) {
	_, err := routing.Load(filepath.Join(t.TempDir(), "none.yaml"))
	require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}
