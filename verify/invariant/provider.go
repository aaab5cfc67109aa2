package invariant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"chargeonce/fakeprovider"
)

// ProviderState is what the fake provider holds: every charge, every refund
// and every request its API received.
type ProviderState struct {
	Charges  []fakeprovider.Charge
	Refunds  []fakeprovider.Refund
	Requests []fakeprovider.RequestRecord
}

// ProviderSource reads the provider's state.
type ProviderSource interface {
	ProviderState(ctx context.Context) (ProviderState, error)
}

// InProcess reads a provider that runs in this process.
type InProcess struct{ Provider *fakeprovider.Provider }

// ProviderState returns the provider's charges, refunds and requests.
func (s InProcess) ProviderState(context.Context) (ProviderState, error) {
	if s.Provider == nil {
		return ProviderState{}, errors.New("invariant: no provider to read")
	}
	return ProviderState{Charges: s.Provider.Charges(), Refunds: s.Provider.Refunds(), Requests: s.Provider.Requests()}, nil
}

// OverHTTP reads a provider through its admin API (GET /_admin/charges,
// GET /_admin/refunds and GET /_admin/requests), so that it may run in
// another process.
type OverHTTP struct {
	// BaseURL is the provider's base URL, such as http://127.0.0.1:8099.
	BaseURL string
	// Client makes the requests; it must carry a timeout.
	Client *http.Client
}

// maxAdminBody bounds what is read of one admin answer. A chaos soak run
// logs a few hundred thousand requests; anything bigger is a runaway.
const maxAdminBody = 512 << 20

// ProviderState returns the provider's charges, refunds and requests.
func (s OverHTTP) ProviderState(ctx context.Context) (ProviderState, error) {
	if s.Client == nil {
		return ProviderState{}, errors.New("invariant: an HTTP client with a timeout is required")
	}
	var st ProviderState
	if err := s.get(ctx, "/_admin/requests", &st.Requests); err != nil {
		return ProviderState{}, err
	}
	if err := s.get(ctx, "/_admin/charges", &st.Charges); err != nil {
		return ProviderState{}, err
	}
	if err := s.get(ctx, "/_admin/refunds", &st.Refunds); err != nil {
		return ProviderState{}, err
	}
	return st, nil
}

func (s OverHTTP) get(ctx context.Context, path string, into any) error {
	url := strings.TrimSuffix(s.BaseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("invariant: provider %s: %w", path, err)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return fmt.Errorf("invariant: provider %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("invariant: provider %s answered %s", path, resp.Status)
	}
	body := struct {
		Data any `json:"data"`
	}{Data: into}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAdminBody)).Decode(&body); err != nil {
		return fmt.Errorf("invariant: provider %s: decode: %w", path, err)
	}
	return nil
}
