package invariant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"chargeonce"
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

// placement says which provider holds each charge and refund, and which
// providers received the charge requests of each key.
type placement struct {
	charges map[string]string
	refunds map[string]string
	keys    map[string]map[string]bool
	// shared are the ids that more than one provider holds, which no two
	// providers may (docs/design.md, "Providers by name").
	shared []Violation
}

// providers are the names of cfg's providers, the default first, and the
// source of each.
func (cfg Config) providers() ([]string, map[string]ProviderSource, error) {
	sources := map[string]ProviderSource{chargeonce.DefaultProvider: cfg.Provider}
	names := []string{chargeonce.DefaultProvider}
	for _, name := range slices.Sorted(maps.Keys(cfg.Others)) {
		if name == chargeonce.DefaultProvider || cfg.Others[name] == nil {
			return nil, nil, fmt.Errorf("invariant: Others holds %q, which is the default provider or no source", name)
		}
		sources[name] = cfg.Others[name]
		names = append(names, name)
	}
	return names, sources, nil
}

// readProviders reads every provider of cfg and merges their states, with
// where each thing is.
func readProviders(ctx context.Context, cfg Config) (ProviderState, placement, error) {
	names, sources, err := cfg.providers()
	if err != nil {
		return ProviderState{}, placement{}, err
	}
	var all ProviderState
	at := placement{charges: map[string]string{}, refunds: map[string]string{}, keys: map[string]map[string]bool{}}
	for _, name := range names {
		ps, err := sources[name].ProviderState(ctx)
		if err != nil {
			return ProviderState{}, placement{}, fmt.Errorf("invariant: provider %s: %w", name, err)
		}
		for _, ch := range ps.Charges {
			if other, ok := at.charges[ch.ID]; ok {
				at.shared = append(at.shared, Violation{Invariant: ChargesMatchAttempts, Order: orderOf(ch), ChargeID: ch.ID,
					Message: fmt.Sprintf("providers %s and %s both hold a charge of this id", other, name)})
			}
			at.charges[ch.ID] = name
		}
		for _, r := range ps.Refunds {
			if other, ok := at.refunds[r.ID]; ok {
				at.shared = append(at.shared, Violation{Invariant: RefundsMatchIntents, Key: r.IdempotencyKey, ChargeID: r.Charge,
					Message: fmt.Sprintf("providers %s and %s both hold refund %s", other, name, r.ID)})
			}
			at.refunds[r.ID] = name
		}
		for _, r := range ps.Requests {
			if r.IsCharge() && r.Key != "" && r.Fingerprint != "" {
				if at.keys[r.Key] == nil {
					at.keys[r.Key] = map[string]bool{}
				}
				at.keys[r.Key][name] = true
			}
		}
		all.Charges = append(all.Charges, ps.Charges...)
		all.Refunds = append(all.Refunds, ps.Refunds...)
		all.Requests = append(all.Requests, ps.Requests...)
	}
	return all, at, nil
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
