package fakeprovider

import (
	"cmp"

	// The package's own dialect type names the API of one request.
	providerdialect "chargeonce/provider/dialect"
)

// DialectSettings are the settings that reach the fake at url in the
// provider dialect api (IETF or Stripe; empty means IETF): with Stripe's,
// the fake's test key, and no lookup delay, since the fake's search reads
// its books at once.
func DialectSettings(api, url string) providerdialect.Settings {
	s := providerdialect.Settings{API: cmp.Or(api, providerdialect.IETF), URL: url, Timeout: providerdialect.DefaultTimeout}
	if s.API == providerdialect.Stripe {
		s.StripeAPIKey = StripeTestKey
	}
	return s
}
