package invariant

import (
	"context"
	"errors"
	"fmt"

	"chargeonce/store"
)

// BooksBalance: the settlement of every provider's report of every date
// the run covered is recorded, found no exception but the repairs of late
// charges, and left no succeeded attempt or refund awaiting its line: each
// provider's books and the merchant's agree, charges and refunds alike.
const BooksBalance Invariant = 8

// booksBalance reads the settlement of each provider's date; it does not
// run one.
func (c *checker) booksBalance(ctx context.Context, st store.SettlementStore, providers, dates []string) error {
	for _, p := range providers {
		if err := c.providerBooksBalance(ctx, st, p, dates); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) providerBooksBalance(ctx context.Context, st store.SettlementStore, provider string, dates []string) error {
	for _, date := range dates {
		run, err := st.SettlementRun(ctx, provider, date)
		if errors.Is(err, store.ErrNotFound) {
			c.add(Violation{Invariant: BooksBalance, Message: fmt.Sprintf("%s has no settlement run at %s", date, provider)})
			continue
		}
		if err != nil {
			return err
		}
		c.report.Settlements++
		if run.Awaiting > 0 {
			c.add(Violation{Invariant: BooksBalance, Message: fmt.Sprintf("%s: %d succeeded attempts or refunds at %s are in no settlement report yet", date, run.Awaiting, provider)})
		}
		exceptions, err := st.SettlementExceptions(ctx, provider, date, store.MaxSettlementBatch)
		if err != nil {
			return err
		}
		for _, e := range exceptions {
			if e.Kind.Repair() {
				continue
			}
			c.add(Violation{Invariant: BooksBalance, Order: e.OrderID, Key: e.AttemptKey, ChargeID: e.ChargeID,
				Message: fmt.Sprintf("%s %s at %s: %s", date, e.Kind, provider, e.Detail)})
		}
	}
	return nil
}
