// Package routing chooses the providers a payment goes to. A Table holds
// the providers a deployment reaches and the rules that route each payment
// to them: by currency, optionally by amount range, an ordered list of
// providers, and optional weights that split the volume of the first
// choice. Every process that routes reads the same routing file (Load),
// whose format docs/routing.md describes.
//
// A route is only the order in which providers may be tried. Whether a
// payment may move from one provider to the next is not the table's to
// say: the checkout moves it only from an outcome that proves nothing was
// charged (docs/design.md, "Failover").
package routing

import (
	"hash/fnv"
	"slices"
	"strconv"

	"chargeonce"
	"chargeonce/internal/webhook"
	"chargeonce/provider/dialect"
)

// Provider is one provider of the table: how to reach it, and the secrets
// that sign its events.
type Provider struct {
	dialect.Settings
	// WebhookSecrets verify the provider's events at
	// /webhooks/provider/<name>; none serves no event route for it.
	WebhookSecrets []webhook.Secret
}

// Rule routes the payments of its currencies and amount range.
type Rule struct {
	// Currencies are the ISO 4217 codes the rule covers.
	Currencies []string
	// MinAmount and MaxAmount bound the amounts the rule covers, in minor
	// units, both included; a zero MaxAmount has no upper bound.
	MinAmount, MaxAmount int64
	// Providers are the providers' names, in the order they are tried.
	Providers []string
	// Weights, when given, split the first choice among Providers in
	// these proportions, one weight per provider; the others follow in
	// their order.
	Weights []int
	// Line is the rule's line in the routing file, for logs; 0 for a rule
	// that no file wrote.
	Line int
}

// covers reports whether the rule routes a payment of amount.
func (r Rule) covers(amount chargeonce.Money) bool {
	return slices.Contains(r.Currencies, amount.Currency) && amount.Minor >= r.MinAmount &&
		(r.MaxAmount == 0 || amount.Minor <= r.MaxAmount)
}

// Table is a deployment's providers and its rules. It never changes once
// built, so it is safe for concurrent use.
type Table struct {
	providers []Provider
	rules     []Rule
}

// NoRouteError is the error of Route for a payment that no rule covers.
type NoRouteError struct {
	// Amount is the payment's amount, whose currency or size no rule
	// covers.
	Amount chargeonce.Money
}

func (e *NoRouteError) Error() string {
	return "no routing rule covers a payment of " + e.Amount.Currency + " " + e.Amount.Decimal()
}

// Route is the providers a payment may go to, in the order they are tried.
type Route struct {
	// Providers are the providers' names, the first choice first.
	Providers []string
	// Why says which rule chose them, for logs and for the attempts.
	Why string
}

// Of is the table without rules of providers, whose names differ: every
// payment tries them in their order.
func Of(providers ...Provider) *Table {
	return &Table{providers: providers}
}

// Providers returns the table's providers, in the order the file lists
// them.
func (t *Table) Providers() []Provider {
	return slices.Clone(t.providers)
}

// Settings returns the settings of the table's providers, in the order the
// file lists them, the default first: what a process reaching them builds
// its provider registry from (dialect.NewRegistry).
func (t *Table) Settings() []dialect.Settings {
	settings := make([]dialect.Settings, len(t.providers))
	for i, p := range t.providers {
		settings[i] = p.Settings
	}
	return settings
}

// Default is the name of the table's first provider: the provider of the
// attempts stored before attempts named theirs.
func (t *Table) Default() string {
	return t.providers[0].NameOrDefault()
}

// Route returns the providers that a payment of amount for the order may
// go to, by the first rule that covers it. A rule with weights puts first
// the provider that the weights give this order, the same one every time.
// A payment that no rule covers is a *NoRouteError.
func (t *Table) Route(orderID int64, amount chargeonce.Money) (Route, error) {
	if len(t.rules) == 0 {
		names := make([]string, len(t.providers))
		for i, p := range t.providers {
			names[i] = p.NameOrDefault()
		}
		why := "the providers in their order"
		if len(names) == 1 {
			why = "the only provider"
		}
		return Route{Providers: names, Why: why}, nil
	}
	for i, r := range t.rules {
		if !r.covers(amount) {
			continue
		}
		why := "rule " + strconv.Itoa(i+1)
		if r.Line > 0 {
			why += " (line " + strconv.Itoa(r.Line) + ")"
		}
		return Route{Providers: weighted(r, orderID), Why: why}, nil
	}
	return Route{}, &NoRouteError{Amount: amount}
}

// weighted is the rule's providers with the first choice of the order put
// first: the provider whose share of the weights the order's hash falls
// in. Hashing the order, rather than drawing at random, gives every
// checkout of one order the same first choice.
func weighted(r Rule, orderID int64) []string {
	names := slices.Clone(r.Providers)
	if len(r.Weights) == 0 {
		return names
	}
	total := 0
	for _, w := range r.Weights {
		total += w
	}
	h := fnv.New64a()
	h.Write(strconv.AppendInt(nil, orderID, 10))
	pick := int(h.Sum64() % uint64(total))
	for i, w := range r.Weights {
		if pick < w {
			first := names[i]
			return append([]string{first}, slices.Delete(names, i, i+1)...)
		}
		pick -= w
	}
	return names
}
