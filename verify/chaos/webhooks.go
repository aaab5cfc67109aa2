package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"chargeonce/api"
	"chargeonce/fakeprovider"
	"chargeonce/internal/webhook"
)

// webhookSchedule is the fake provider's retry schedule in a run: the
// specification's shape, shrunk like the run's timing, so that a dropped
// or refused event is delivered again within the run.
var webhookSchedule = fakeprovider.Schedule{200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// webhookChaosFor is the j-th webhook chaos of the run: each misbehaviour in
// turn, then normal delivery, over and over.
func (r *run) webhookChaosFor(j int) fakeprovider.WebhookChaos {
	seed := r.cfg.Seed + uint64(j)
	chaos := []fakeprovider.WebhookChaos{
		// Later than the first lookup: the lookup settles first, and the
		// event finds the attempt settled.
		{Delay: r.cfg.Timing.MinAge + r.cfg.Timing.Interval},
		{DropRate: 0.5, Seed: seed},
		{DuplicateRate: 0.5, Seed: seed},
		{Reorder: 2 * time.Second, Seed: seed},
		{},
	}
	return chaos[j%len(chaos)]
}

// setWebhookChaos switches the webhook chaos of every provider's events
// through its admin API.
func (r *run) setWebhookChaos(ctx context.Context, c fakeprovider.WebhookChaos) error {
	for _, p := range r.providers() {
		if err := r.admin(ctx, p.url, http.MethodPut, "/_admin/webhooks", c, nil); err != nil {
			return fmt.Errorf("chaos: set provider %s's webhook chaos: %w", p.name, err)
		}
	}
	return nil
}

// forgery is one way to fake an event: what it does to the headers of a
// body signed with the API's own secret.
type forgery struct {
	name  string
	forge func(h http.Header, id string, body []byte, real webhook.Secret) []byte
}

var forgeries = []forgery{
	{"unsigned", func(http.Header, string, []byte, webhook.Secret) []byte { return nil }},
	{"signed with another secret", func(h http.Header, id string, body []byte, _ webhook.Secret) []byte {
		other, _ := webhook.ParseSecret(webhook.NewSecret())
		webhook.Sign(h, id, time.Now(), body, other)
		return nil
	}},
	{"body changed after signing", func(h http.Header, id string, body []byte, real webhook.Secret) []byte {
		webhook.Sign(h, id, time.Now(), body, real)
		return bytes.Replace(body, []byte(`"status":"failed"`), []byte(`"status":"succeeded"`), 1)
	}},
	{"replayed after the tolerance", func(h http.Header, id string, body []byte, real webhook.Secret) []byte {
		webhook.Sign(h, id, time.Now().Add(-2*webhook.Tolerance), body, real)
		return nil
	}},
}

// forgeEvent posts the j-th forged event: a charge.succeeded claim for the
// newest attempt of the newest order. The API must refuse it with 401 and
// store nothing; an order it changed would show in the invariant check as
// a paid order without a charge.
func (r *run) forgeEvent(ctx context.Context, j int) error {
	ref := "chaos_forged_reference"
	if a, ok := r.newestOrderAttempt(ctx); ok {
		ref = a
	}
	f := forgeries[j%len(forgeries)]
	id := fmt.Sprintf("msg_forged_%d", j)
	body := fmt.Appendf(nil, `{"type":%q,"data":{"id":"ch_forged_%d","object":"charge","amount":1,"currency":"TRY","status":"failed","merchant_reference":%q}}`,
		webhook.EventChargeSucceeded, j, ref)
	real, err := r.stack.WebhookSecret()
	if err != nil {
		return err
	}
	h := http.Header{}
	if changed := f.forge(h, id, body, real); changed != nil {
		body = changed
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.stack.APIURL()+api.WebhookPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return fmt.Errorf("chaos: forged event: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		r.unexpectedf("forged event (%s) for %s answered %d, want 401", f.name, ref, resp.StatusCode)
	}
	events, err := r.stack.Store().ProviderEvents(ctx, ref)
	if err != nil {
		return err
	}
	for _, e := range events {
		if e.ID == id {
			r.unexpectedf("forged event (%s) for %s was stored", f.name, ref)
		}
	}
	return nil
}

// newestOrderAttempt is the merchant reference of the newest attempt of the
// newest order, if there is one.
func (r *run) newestOrderAttempt(ctx context.Context) (string, bool) {
	r.mu.Lock()
	var id int64
	if n := len(r.orders); n > 0 {
		id = r.orders[n-1]
	}
	r.mu.Unlock()
	if id == 0 {
		return "", false
	}
	_, attempts, err := r.stack.Store().GetOrder(ctx, id)
	if err != nil || len(attempts) == 0 {
		return "", false
	}
	return attempts[len(attempts)-1].MerchantReference, true
}
