package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// CheckHTTP checks the base URL and the HTTP client of an adapter's
// configuration, and parses the URL.
//
// The client must have a positive Timeout, so that a call without a context
// deadline cannot hang a worker forever. The URL is the provider's root, such
// as "https://api.provider.example" or "http://127.0.0.1:8081"; a path
// prefix is kept, credentials, a query and a fragment are refused.
func CheckHTTP(baseURL string, hc *http.Client) (*url.URL, error) {
	switch {
	case hc == nil:
		return nil, errors.New("config: HTTPClient is nil; pass an *http.Client with a Timeout")
	case hc.Timeout <= 0:
		return nil, errors.New("config: HTTPClient has no Timeout; without one a request can hang forever")
	}
	u, err := url.Parse(baseURL)
	switch {
	case baseURL == "":
		return nil, errors.New("config: BaseURL is empty")
	case err != nil:
		return nil, fmt.Errorf("config: BaseURL %q: %w", baseURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("config: BaseURL %q: scheme must be http or https", baseURL)
	case u.Host == "":
		return nil, fmt.Errorf("config: BaseURL %q has no host", baseURL)
	case u.User != nil:
		return nil, fmt.Errorf("config: BaseURL %q must not carry credentials", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("config: BaseURL %q must not have a query or fragment", baseURL)
	}
	return u, nil
}

// TransportOutcome reads an error of the HTTP client. A deadline, whether the
// caller's context or the client's Timeout, is a Timeout; so is the caller
// cancelling, because either way we stopped listening to a request that may
// have arrived. Anything else is a connection that failed under us.
func TransportOutcome(ctx context.Context, err error) Outcome {
	var netErr net.Error
	switch {
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Timeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return Timeout
	}
	return TransportError
}

// DialFailed reports whether err is a failure to open the connection
// (refused, unreachable, no such host, or a connect timeout): then not a
// byte of the request left, and the provider cannot have seen it. A failure
// on a connection that was open, even one reused from an earlier request,
// may come after the request was written.
func DialFailed(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// maxChargeIDLength is the longest charge id an adapter puts into a path.
const maxChargeIDLength = 255

// CheckChargeID checks a charge id that goes into a URL path, such as
// /charges/{id}/capture: it must be non-empty, at most 255 characters, and
// of the characters A-Z, a-z, 0-9, '_' and '-' alone, the characters of
// every provider's ids. Anything else is a bug on our side, and escaping it
// would only send the request to some other path.
func CheckChargeID(id string) error {
	switch {
	case id == "":
		return errors.New("charge id is empty")
	case len(id) > maxChargeIDLength:
		return fmt.Errorf("charge id has %d characters, more than %d", len(id), maxChargeIDLength)
	}
	for _, r := range id {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("charge id %q has the character %q, which is not safe in a URL path", id, r)
		}
	}
	return nil
}
