package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/provider/dialect"
	"chargeonce/verify/invariant"
)

// fakeAt is one of a run's fake providers: its name, which the attempts
// sent to it store, and the base URL of its API and admin API. The run
// drives and reads every provider through its admin API, as an operator
// of a provider in another process would.
type fakeAt struct{ name, url string }

// providers are the run's fake providers (fakes).
func (r *run) providers() []fakeAt { return fakes(r.stack) }

// fakes are the fake providers of t: the first, and the backup when t runs
// one (Config.Backup), in the order the payments try them.
func fakes(t target) []fakeAt {
	ps := []fakeAt{{chargeonce.DefaultProvider, t.ProviderURL()}}
	if u := t.BackupURL(); u != "" {
		ps = append(ps, fakeAt{stack.BackupName, u})
	}
	return ps
}

// provider is the named provider of the run.
func (r *run) provider(name string) (fakeAt, error) {
	for _, p := range r.providers() {
		if p.name == name {
			return p, nil
		}
	}
	return fakeAt{}, fmt.Errorf("chaos: the run has no provider %q", name)
}

// providerStates reads every provider's charges, refunds and requests, by
// name.
func (r *run) providerStates(ctx context.Context) (map[string]invariant.ProviderState, error) {
	states := map[string]invariant.ProviderState{}
	for _, p := range r.providers() {
		st, err := r.providerSource(p).ProviderState(ctx)
		if err != nil {
			return nil, fmt.Errorf("chaos: provider %s: %w", p.name, err)
		}
		states[p.name] = st
	}
	return states, nil
}

// providerSource reads p for the checker, over its admin API.
func (r *run) providerSource(p fakeAt) invariant.OverHTTP {
	return invariant.OverHTTP{BaseURL: p.url, Client: &http.Client{Timeout: time.Minute}}
}

// providerRequests is every provider's request log. A key is the key of
// one attempt or refund, which went to one provider, so the logs never
// share one.
func (r *run) providerRequests(ctx context.Context) ([]fakeprovider.RequestRecord, error) {
	states, err := r.providerStates(ctx)
	if err != nil {
		return nil, err
	}
	var all []fakeprovider.RequestRecord
	for _, st := range states {
		all = append(all, st.Requests...)
	}
	return all, nil
}

// expireKeysEverywhere makes every provider forget the keys older than
// the retention, and returns how many they forgot.
func (r *run) expireKeysEverywhere(ctx context.Context) (int, error) {
	forgotten := 0
	for _, p := range r.providers() {
		var out struct {
			Forgotten int `json:"forgotten"`
		}
		if err := r.admin(ctx, p.url, http.MethodPost, "/_admin/expire-keys", map[string]string{"older_than": r.cfg.Retention.String()}, &out); err != nil {
			return forgotten, fmt.Errorf("provider %s: expire keys: %w", p.name, err)
		}
		forgotten += out.Forgotten
	}
	return forgotten, nil
}

// eventTries counts every provider's event delivery tries by outcome.
func (r *run) eventTries(ctx context.Context) (map[string]int, error) {
	tries := map[string]int{}
	for _, p := range r.providers() {
		var st fakeprovider.WebhookState
		if err := r.admin(ctx, p.url, http.MethodGet, "/_admin/webhooks", nil, &st); err != nil {
			return nil, fmt.Errorf("chaos: provider %s: webhooks: %w", p.name, err)
		}
		for _, d := range st.Deliveries {
			tries[d.Outcome]++
		}
	}
	return tries, nil
}

// maxAdminAnswer bounds what is read of one admin answer: the webhook
// state lists every delivery of a run.
const maxAdminAnswer = 256 << 20

// admin sends v, unless nil, as JSON to the admin API of the provider at
// base, at path, and, when out is not nil, decodes the answer into it.
func (r *run) admin(ctx context.Context, base, method, path string, v, out any) error {
	var body io.Reader
	if v != nil {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	if v != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// routingFile is the name of the routing file that a run with a backup
// writes into its data directory for the worker processes.
const routingFile = "routing.yaml"

// writeRouting writes the routing file of the worker processes of a run
// with a backup into dir and returns its path: the providers in the
// stack's order, the first and then the backup, as the stack's API routes
// them (stack.Config.Backup), each with the run's provider timeout.
func writeRouting(dir string, cfg Config, providers []fakeAt) (string, error) {
	var b strings.Builder
	b.WriteString("# The chaos run's providers: every payment goes to the first, and moves\n# to the backup when the first charged nothing.\nproviders:\n")
	for _, p := range providers {
		fmt.Fprintf(&b, "  - name: %s\n    url: %q\n    timeout: %s\n", p.name, p.url, providerTimeout)
		if cfg.ProviderAPI == dialect.Stripe {
			// The fake's search reads its books at once.
			fmt.Fprintf(&b, "    dialect: stripe\n    api_key: %q\n    search_delay: 0s\n", fakeprovider.StripeTestKey)
		} else {
			b.WriteString("    dialect: ietf\n")
		}
	}
	path := filepath.Join(dir, routingFile)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("chaos: routing file: %w", err)
	}
	return path, nil
}
