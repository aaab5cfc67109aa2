package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	stripeapi "github.com/stripe/stripe-go/v84"

	"chargeonce/provider"
)

// FindCharges searches the PaymentIntents whose metadata carries
// merchantReference and returns them as charges, oldest first; none is an
// empty list. Search is eventually consistent (SearchDelay), so an empty
// answer is only meaningful for a charge older than that, which the
// worker's timing checks. Errors are *provider.Error; a PaymentIntent still
// processing is a retryable InFlight.
func (c *Client) FindCharges(ctx context.Context, merchantReference string) ([]provider.Charge, error) {
	const op = "find charges"
	if merchantReference == "" {
		return nil, &provider.Error{Op: op, Outcome: provider.InvalidRequest, Detail: "not sent: merchant reference is empty"}
	}
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Op: op, Outcome: provider.Timeout, Detail: "not sent: " + err.Error()}
	}
	params := &stripeapi.PaymentIntentSearchParams{}
	params.Query = searchQuery(merchantReference)
	params.Limit = stripeapi.Int64(100)
	ctx, ex := record(ctx)
	var charges []provider.Charge
	for pi, err := range c.api.V1PaymentIntents.Search(ctx, params) {
		if err != nil {
			return nil, lookupError(ctx, op, ex, err)
		}
		ch, err := charge(pi)
		if errors.Is(err, errInFlight) {
			return nil, &provider.Error{Op: op, Outcome: provider.InFlight, StatusCode: ex.status, Detail: err.Error()}
		}
		if err == nil && ch.MerchantReference != merchantReference {
			err = fmt.Errorf("PaymentIntent %s has metadata[%s] %q, want %q", ch.ID, metadataReference, ch.MerchantReference, merchantReference)
		}
		if err != nil {
			return nil, &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: ex.status, Detail: err.Error()}
		}
		charges = append(charges, ch)
	}
	if charges == nil {
		charges = []provider.Charge{}
	}
	slices.SortStableFunc(charges, func(a, b provider.Charge) int { return a.Created.Compare(b.Created) })
	return charges, nil
}

// searchQuery is the Search API query for a metadata value, quoted as
// Stripe's query language asks: a backslash escapes a quote.
func searchQuery(merchantReference string) string {
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(merchantReference)
	return "metadata['" + metadataReference + "']:'" + quoted + "'"
}

// lookupError reads a failed search as a *provider.Error.
func lookupError(ctx context.Context, op string, ex *exchange, err error) error {
	var serr *stripeapi.Error
	switch {
	case errors.As(err, &serr):
		return &provider.Error{Op: op, Outcome: statusOutcome(serr.HTTPStatusCode), StatusCode: serr.HTTPStatusCode, Detail: describe(serr)}
	case ex.status == http.StatusOK:
		return &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: ex.status, Detail: "decoding the answer: " + err.Error()}
	case ex.status != 0:
		return &provider.Error{Op: op, Outcome: statusOutcome(ex.status), StatusCode: ex.status, Detail: fmt.Sprintf("HTTP %d without a readable Stripe answer: %v", ex.status, err)}
	}
	return &provider.Error{Op: op, Outcome: provider.TransportOutcome(ctx, err), Detail: err.Error()}
}
