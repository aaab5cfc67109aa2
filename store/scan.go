package store

import (
	"context"
	"fmt"
	"time"

	"chargeonce"
)

// queryOne returns the first row of a query, or ErrNotFound when there is none.
func queryOne[T any](ctx context.Context, q querier, scan func(rows) (T, error), query string, args ...any) (T, error) {
	var zero T
	r, err := q.query(ctx, query, args...)
	if err != nil {
		return zero, err
	}
	defer r.Close()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return zero, err
		}
		return zero, ErrNotFound
	}
	v, err := scan(r)
	if err != nil {
		return zero, err
	}
	return v, nil
}

// queryAll returns every row of a query.
func queryAll[T any](ctx context.Context, q querier, scan func(rows) (T, error), query string, args ...any) ([]T, error) {
	r, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var all []T
	for r.Next() {
		v, err := scan(r)
		if err != nil {
			return nil, err
		}
		all = append(all, v)
	}
	return all, r.Err()
}

func scanInt64(r rows) (int64, error) {
	var n int64
	err := r.Scan(&n)
	return n, err
}

func scanString(r rows) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}

// timestamp scans a time column of either database: PostgreSQL returns a
// time.Time, SQLite the INTEGER of Unix microseconds that the store writes.
type timestamp struct {
	t     time.Time
	valid bool
}

func (ts *timestamp) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*ts = timestamp{}
	case time.Time:
		*ts = timestamp{t: v.UTC(), valid: true}
	case int64:
		*ts = timestamp{t: time.UnixMicro(v).UTC(), valid: true}
	default:
		return fmt.Errorf("a time column holds a %T", src)
	}
	return nil
}

// required returns the time of a NOT NULL column.
func (ts timestamp) required(column string) (time.Time, error) {
	if !ts.valid {
		return time.Time{}, fmt.Errorf("%s is NULL", column)
	}
	return ts.t, nil
}

// errCorrupt wraps what a row that the store cannot have written holds.
func errCorrupt(what string, id any, err error) error {
	return fmt.Errorf("%s %v holds corrupt data: %w", what, id, err)
}

func scanOrder(r rows) (Order, error) {
	var (
		o                Order
		minor            int64
		currency, status string
		created, updated timestamp
	)
	if err := r.Scan(&o.ID, &minor, &currency, &o.Description, &status, &o.ProviderPaymentID, &created, &updated); err != nil {
		return Order{}, err
	}
	var err error
	if o.Amount, err = chargeonce.NewMoney(minor, currency); err != nil {
		return Order{}, errCorrupt("order", o.ID, err)
	}
	if o.Status = chargeonce.OrderStatus(status); !o.Status.Valid() {
		return Order{}, errCorrupt("order", o.ID, fmt.Errorf("unknown status %q", status))
	}
	if o.CreatedAt, err = created.required("created_at"); err != nil {
		return Order{}, errCorrupt("order", o.ID, err)
	}
	if o.UpdatedAt, err = updated.required("updated_at"); err != nil {
		return Order{}, errCorrupt("order", o.ID, err)
	}
	return o, nil
}

func scanAttempt(r rows) (Attempt, error) { return scanAttemptAnd(r) }

// scanAttemptAnd scans attemptColumns, and then the columns that follow
// them into extra.
func scanAttemptAnd(r rows, extra ...any) (Attempt, error) {
	var (
		a                          Attempt
		minor                      int64
		currency, status           string
		created, checked, abandonT timestamp
	)
	if err := r.Scan(append([]any{&a.Key, &a.OrderID, &minor, &currency, &a.CardHash, &a.CardHashKeyed, &a.MerchantReference, &status,
		&a.ProviderPaymentID, &a.WorkflowStarted, &created, &checked, &abandonT, &a.Provider, &a.Capture, &a.OnDeadline, &a.RoutedBy}, extra...)...); err != nil {
		return Attempt{}, err
	}
	var err error
	if a.Amount, err = chargeonce.NewMoney(minor, currency); err != nil {
		return Attempt{}, errCorrupt("attempt", a.Key, err)
	}
	if a.Status = chargeonce.AttemptStatus(status); !a.Status.Valid() {
		return Attempt{}, errCorrupt("attempt", a.Key, fmt.Errorf("unknown status %q", status))
	}
	if a.CreatedAt, err = created.required("created_at"); err != nil {
		return Attempt{}, errCorrupt("attempt", a.Key, err)
	}
	if a.AbandonAt, err = abandonT.required("abandon_at"); err != nil {
		return Attempt{}, errCorrupt("attempt", a.Key, err)
	}
	if a.Capture == "" || !a.Capture.Valid() || !a.OnDeadline.Valid() || (a.OnDeadline == "") == a.Capture.Manual() {
		return Attempt{}, errCorrupt("attempt", a.Key, fmt.Errorf("capture mode %q with deadline action %q", a.Capture, a.OnDeadline))
	}
	if checked.valid {
		a.LastCheckedAt = &checked.t
	}
	return a, nil
}

func scanRequest(r rows) (chargeonce.ProviderRequest, error) {
	var (
		p          chargeonce.ProviderRequest
		sent       timestamp
		durationUS int64
	)
	if err := r.Scan(&p.Key, &sent, &p.StatusCode, &p.Outcome, &p.Replayed, &durationUS); err != nil {
		return p, err
	}
	var err error
	if p.At, err = sent.required("at"); err != nil {
		return p, errCorrupt("request of attempt", p.Key, err)
	}
	p.Duration = time.Duration(durationUS) * time.Microsecond
	return p, nil
}
