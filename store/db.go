package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"chargeonce"
)

// dialect is what differs between the databases. Every query is written once,
// with $N placeholders, which both PostgreSQL and SQLite accept.
type dialect struct {
	// migrations is the directory of the embedded migrations.
	migrations string
	// migrationsTable creates the schema_migrations table if it is missing.
	migrationsTable string
	// migrationLock, when set, runs first in the migration transaction so
	// that two processes starting at once migrate one after the other.
	migrationLock string
	// lockOrder ends the SELECT that reads the order in GetOrStartAttempt,
	// so that concurrent checkouts of one order take turns.
	lockOrder string
	// lockCharge, when set, takes a lock on the charge id $1 until the
	// transaction ends, so that the refunds of one charge are decided one
	// at a time whichever order, if any, they come through.
	lockCharge string
	// skipLocked ends the SELECT of ClaimDeliveries: it locks the rows it
	// picks and passes over those that a concurrent claim locked, so that
	// two dispatchers claim different deliveries instead of waiting.
	skipLocked string
	// timeArg turns a time, already truncated to the microsecond and in UTC,
	// into the value stored in a time column.
	timeArg func(time.Time) any
	// uniqueViolation reports whether err is a unique-constraint violation.
	uniqueViolation func(error) bool
	// byteOrder follows a text column that is compared or sorted to page
	// through it, so that the database orders it byte by byte, as Go
	// compares strings; a database's own collation may order "ch_B" before
	// "ch_a" or ignore punctuation.
	byteOrder string
	// epochDay returns the expression of the number of whole UTC days from
	// the Unix epoch to the time in column, so that a query can group by
	// day.
	epochDay func(column string) string
}

// txRunner runs transactions on one of the databases.
type txRunner interface {
	// inTx runs fn in a transaction and commits it when fn returns nil. A
	// transaction that does not write gets a consistent snapshot and takes
	// no write lock.
	inTx(ctx context.Context, write bool, fn func(q querier) error) error
	close() error
}

// querier runs statements inside a transaction.
type querier interface {
	exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	query(ctx context.Context, query string, args ...any) (rows, error)
}

// rows is the part of a result set that both drivers offer.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// db implements Store on either database.
type db struct {
	txs txRunner
	d   dialect
}

// maxUnstartedLimit bounds one page of the outbox.
const maxUnstartedLimit = 1000

// getOrStartPasses bounds how often GetOrStartAttempt reads the attempts again
// after its insert lost to a concurrent one.
const getOrStartPasses = 3

const orderColumns = `id, amount_minor, currency, description, status, COALESCE(provider_payment_id, ''), created_at, updated_at`

const attemptColumns = `idempotency_key, order_id, amount_minor, currency, card_hash, card_hash_keyed, merchant_reference, status,
	COALESCE(provider_payment_id, ''), workflow_started, created_at, last_checked_at, abandon_at, provider, capture_mode,
	COALESCE(on_deadline, ''), COALESCE(routed_by, '')`

const requestColumns = `r.idempotency_key, r.at, r.status_code, r.outcome, r.replayed, r.duration_us`

// storedTime brings a time to what the databases store: UTC, to the microsecond.
func storedTime(t time.Time) time.Time {
	return t.Truncate(time.Microsecond).UTC()
}

func (s *db) t(t time.Time) any {
	return s.d.timeArg(storedTime(t))
}

func (s *db) Close() error {
	return s.txs.close()
}

func (s *db) CreateOrder(ctx context.Context, amount chargeonce.Money, description string) (Order, error) {
	if _, err := chargeonce.NewMoney(amount.Minor, amount.Currency); err != nil {
		return Order{}, fmt.Errorf("store: create order: %w", err)
	}
	if err := chargeonce.ValidateDescription(description); err != nil {
		return Order{}, fmt.Errorf("store: create order: the description %w", err)
	}
	now := s.t(time.Now())
	var o Order
	err := s.txs.inTx(ctx, true, func(q querier) error {
		id, err := queryOne(ctx, q, scanInt64,
			`INSERT INTO orders (amount_minor, currency, description, status, created_at, updated_at)
			VALUES ($1, $2, $3, 'placed', $4, $4) RETURNING id`,
			amount.Minor, amount.Currency, description, now)
		if err != nil {
			return err
		}
		o, err = queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return Order{}, fmt.Errorf("store: create order: %w", err)
	}
	return o, nil
}

func (s *db) Order(ctx context.Context, id int64) (Order, error) {
	var o Order
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		o, err = queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return Order{}, fmt.Errorf("store: order %d: %w", id, err)
	}
	return o, nil
}

func (s *db) GetOrder(ctx context.Context, id int64) (Order, []Attempt, error) {
	var (
		o        Order
		attempts []Attempt
	)
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		if o, err = queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`, id); err != nil {
			return err
		}
		attempts, err = loadAttempts(ctx, q, `order_id`, id)
		return err
	})
	if err != nil {
		return Order{}, nil, fmt.Errorf("store: order %d: %w", id, err)
	}
	return o, attempts, nil
}

func (s *db) GetAttempt(ctx context.Context, key string) (Attempt, error) {
	var attempts []Attempt
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		attempts, err = loadAttempts(ctx, q, `idempotency_key`, key)
		return err
	})
	if err == nil && len(attempts) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("store: attempt %s: %w", key, err)
	}
	return attempts[0], nil
}

// loadAttempts reads the attempts whose column equals value, oldest first,
// each with its request log.
func loadAttempts(ctx context.Context, q querier, column string, value any) ([]Attempt, error) {
	attempts, err := queryAll(ctx, q, scanAttempt,
		`SELECT `+attemptColumns+` FROM payment_attempts WHERE `+column+` = $1 ORDER BY created_at, idempotency_key`, value)
	if err != nil || len(attempts) == 0 {
		return attempts, err
	}
	logs, err := loadRequests(ctx, q, attemptIntents, column, value)
	if err != nil {
		return nil, err
	}
	for i := range attempts {
		attempts[i].Requests = logs[attempts[i].Key]
	}
	return attempts, nil
}

// intentTables names the tables of one kind of keyed intent, a payment
// attempt or a refund: its rows, keyed by idempotency_key, and their request
// log. The outbox, the request log and the checks are the same for both.
type intentTables struct {
	// what names one row in errors.
	what string
	// table holds the rows; open is the status of a row whose outcome is
	// not known yet, written into the queries as a literal so that they
	// match the partial indexes on it.
	table, open string
	// requests is the request log.
	requests string
}

var (
	attemptIntents = intentTables{what: "attempt", table: "payment_attempts", open: "open", requests: "provider_requests"}
	refundIntents  = intentTables{what: "refund", table: "refunds", open: "pending", requests: "refund_requests"}
)

// loadRequests reads the request logs of the rows of it.table whose column
// equals value, oldest first, by idempotency key.
func loadRequests(ctx context.Context, q querier, it intentTables, column string, value any) (map[string][]chargeonce.ProviderRequest, error) {
	requests, err := queryAll(ctx, q, scanRequest,
		`SELECT `+requestColumns+` FROM `+it.requests+` r
		JOIN `+it.table+` a ON a.idempotency_key = r.idempotency_key
		WHERE a.`+column+` = $1 ORDER BY r.at, r.id`, value)
	if err != nil {
		return nil, err
	}
	logs := make(map[string][]chargeonce.ProviderRequest)
	for _, r := range requests {
		logs[r.Key] = append(logs[r.Key], r)
	}
	return logs, nil
}

func (s *db) GetOrStartAttempt(ctx context.Context, n NewAttempt) (Order, Attempt, Decision, error) {
	if err := n.validate(); err != nil {
		return Order{}, Attempt{}, "", err
	}
	var (
		o Order
		a Attempt
		d Decision
	)
	err := s.txs.inTx(ctx, true, func(q querier) error {
		var err error
		o, a, d, err = s.getOrStart(ctx, q, n)
		return err
	})
	if err != nil {
		return Order{}, Attempt{}, "", fmt.Errorf("store: checkout of order %d: %w", n.OrderID, err)
	}
	return o, a, d, nil
}

func (s *db) getOrStart(ctx context.Context, q querier, n NewAttempt) (Order, Attempt, Decision, error) {
	order, err := queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`+s.d.lockOrder, n.OrderID)
	if err != nil {
		return Order{}, Attempt{}, "", err
	}
	if !order.Status.Open() {
		// Paid, refunded, or authorized by a hold that may have ended
		// since: its charge is on record, so it is never offered for
		// payment again.
		a, err := payingAttempt(ctx, q, order)
		return order, a, DecisionAlreadyPaid, err
	}
	capture, onDeadline := n.mode()
	for range getOrStartPasses {
		attempts, err := queryAll(ctx, q, scanAttempt,
			`SELECT `+attemptColumns+` FROM payment_attempts WHERE order_id = $1 ORDER BY created_at, idempotency_key`, n.OrderID)
		if err != nil {
			return Order{}, Attempt{}, "", err
		}
		if a, d, decided := decide(order, attempts, n); decided {
			return order, a, d, nil
		}
		if order.Status != chargeonce.OrderPlaced {
			return Order{}, Attempt{}, "", fmt.Errorf("the order is %s with no open or failed attempt, so it cannot take a new one", order.Status)
		}
		inserted, err := q.exec(ctx,
			`INSERT INTO payment_attempts (idempotency_key, order_id, amount_minor, currency, card_hash, card_hash_keyed,
				merchant_reference, status, workflow_started, created_at, abandon_at, provider, capture_mode, on_deadline, routed_by)
			VALUES ($1, $2, $3, $4, $5, true, $6, 'open', false, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (order_id) WHERE status = 'open' DO NOTHING`,
			n.Key, n.OrderID, order.Amount.Minor, order.Amount.Currency, n.CardHash,
			chargeonce.MerchantReference(n.ReferencePrefix, n.OrderID, n.Key), s.t(n.Now), s.t(n.Now.Add(n.AbandonAfter)), n.Provider,
			string(capture), nullIfEmpty(string(onDeadline)), nullIfEmpty(n.RoutedBy))
		if s.d.uniqueViolation(err) {
			return Order{}, Attempt{}, "", fmt.Errorf("%w: key %s or its merchant reference already belongs to another attempt", ErrConflict, n.Key)
		}
		if err != nil {
			return Order{}, Attempt{}, "", err
		}
		if inserted == 0 {
			// An open attempt committed by a writer that did not lock the
			// order: read again and decide on it.
			continue
		}
		next := chargeonce.NextOrderStatus(order.Status, chargeonce.OrderEvent{Kind: chargeonce.OrderAttemptStarted})
		order, err = queryOne(ctx, q, scanOrder, `UPDATE orders SET status = $3, updated_at = $2
			WHERE id = $1 AND status = $4 RETURNING `+orderColumns, n.OrderID, s.t(n.Now), string(next), string(order.Status))
		if errors.Is(err, ErrNotFound) {
			return Order{}, Attempt{}, "", errors.New("the order changed while it was locked")
		}
		if err != nil {
			return Order{}, Attempt{}, "", err
		}
		a, err := queryOne(ctx, q, scanAttempt, `SELECT `+attemptColumns+` FROM payment_attempts WHERE idempotency_key = $1`, n.Key)
		return order, a, DecisionCreated, err
	}
	return Order{}, Attempt{}, "", fmt.Errorf("another open attempt kept appearing and settling; gave up after %d reads", getOrStartPasses)
}

// payingAttempt returns the attempt whose charge paid the order, or whose
// hold it authorized: the one that succeeded with it, or the one whose late
// charge the order adopted (RecordLateCharge). An order marked paid by hand
// has none, and gets the zero Attempt.
func payingAttempt(ctx context.Context, q querier, order Order) (Attempt, error) {
	a, err := queryOne(ctx, q, scanAttempt, `SELECT `+attemptColumns+` FROM payment_attempts
		WHERE order_id = $1 AND status = 'succeeded' AND provider_payment_id = $2`, order.ID, order.ProviderPaymentID)
	if !errors.Is(err, ErrNotFound) {
		return a, err
	}
	a, err = queryOne(ctx, q, scanAttempt, `SELECT `+attemptColumns+` FROM payment_attempts
		WHERE idempotency_key = (SELECT attempt_key FROM late_charges WHERE charge_id = $1 AND order_id = $2)`,
		order.ProviderPaymentID, order.ID)
	if errors.Is(err, ErrNotFound) {
		return Attempt{}, nil
	}
	return a, err
}

// decide applies the checkout rules to an order still open to payment and
// its attempts, oldest first. It reports false when a new attempt is to be
// created.
func decide(order Order, attempts []Attempt, n NewAttempt) (Attempt, Decision, bool) {
	capture, onDeadline := n.mode()
	var failed *Attempt
	for i, a := range attempts {
		switch a.Status {
		case chargeonce.AttemptOpen:
			// The open attempt's key is sent again only for the very
			// payment it was stored for: a hold is not a charge.
			if a.Amount == order.Amount && a.CardHash == n.CardHash && a.Capture == capture && a.OnDeadline == onDeadline {
				return a, DecisionReused, true
			}
			return a, DecisionConflict, true
		case chargeonce.AttemptFailed:
			failed = &attempts[i]
		}
	}
	if failed != nil {
		return *failed, DecisionNeedsReview, true
	}
	return Attempt{}, "", false
}

func (s *db) MarkWorkflowStarted(ctx context.Context, key string) error {
	return s.markWorkflowStarted(ctx, attemptIntents, key)
}

func (s *db) MarkChecked(ctx context.Context, key string, checkedAt time.Time) error {
	return s.markChecked(ctx, attemptIntents, key, checkedAt)
}

func (s *db) markWorkflowStarted(ctx context.Context, it intentTables, key string) error {
	err := s.updateByKey(ctx, it, key, `workflow_started = true`)
	if err != nil {
		return fmt.Errorf("store: mark workflow of %s %s started: %w", it.what, key, err)
	}
	return nil
}

func (s *db) markChecked(ctx context.Context, it intentTables, key string, checkedAt time.Time) error {
	if checkedAt.IsZero() {
		return fmt.Errorf("store: mark %s %s checked: the time is missing", it.what, key)
	}
	err := s.updateByKey(ctx, it, key, `last_checked_at = $2`, s.t(checkedAt))
	if err != nil {
		return fmt.Errorf("store: mark %s %s checked: %w", it.what, key, err)
	}
	return nil
}

// updateByKey sets columns of the one row of it.table whose key is $1, and
// reports ErrNotFound when there is no such row.
func (s *db) updateByKey(ctx context.Context, it intentTables, key, set string, args ...any) error {
	if !chargeonce.ValidKey(key) {
		return fmt.Errorf("key %q is not a lower-case UUID", key)
	}
	return s.txs.inTx(ctx, true, func(q querier) error {
		n, err := q.exec(ctx, `UPDATE `+it.table+` SET `+set+` WHERE idempotency_key = $1`, append([]any{key}, args...)...)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	})
}

func (s *db) UnstartedAttempts(ctx context.Context, createdBefore time.Time, limit int) ([]Attempt, error) {
	return unstarted(ctx, s, attemptIntents, attemptColumns, scanAttempt, createdBefore, limit)
}

// unstarted reads a page of the outbox of it: open rows whose workflow is
// not known to run, created before createdBefore, oldest first.
func unstarted[T any](ctx context.Context, s *db, it intentTables, columns string, scan func(rows) (T, error), createdBefore time.Time, limit int) ([]T, error) {
	if limit <= 0 || limit > maxUnstartedLimit {
		return nil, fmt.Errorf("store: unstarted %ss: limit %d is not between 1 and %d", it.what, limit, maxUnstartedLimit)
	}
	var page []T
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		page, err = queryAll(ctx, q, scan,
			`SELECT `+columns+` FROM `+it.table+`
			WHERE status = '`+it.open+`' AND NOT workflow_started AND created_at < $1
			ORDER BY created_at, idempotency_key LIMIT $2`, s.t(createdBefore), limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: unstarted %ss: %w", it.what, err)
	}
	return page, nil
}

func validateRequest(r chargeonce.ProviderRequest) error {
	switch {
	case !chargeonce.ValidKey(r.Key):
		return fmt.Errorf("key %q is not a lower-case UUID", r.Key)
	case r.At.IsZero():
		return errors.New("the time of the request is missing")
	case r.StatusCode != 0 && (r.StatusCode < 100 || r.StatusCode > 599):
		return fmt.Errorf("status code %d is neither 0 (no response) nor an HTTP status", r.StatusCode)
	case r.Outcome == "":
		return errors.New("the outcome is missing")
	case r.Duration < 0:
		return fmt.Errorf("duration %v is negative", r.Duration)
	}
	return nil
}

func (s *db) SettleAttempt(ctx context.Context, key string, status chargeonce.AttemptStatus, providerPaymentID string, settledAt time.Time) (Settlement, error) {
	switch {
	case !chargeonce.ValidKey(key):
		return Settlement{}, fmt.Errorf("store: settle attempt: key %q is not a lower-case UUID", key)
	case !chargeonce.AttemptOpen.CanSettleAs(status):
		return Settlement{}, fmt.Errorf("store: settle attempt %s: status %q is not terminal", key, status)
	case status == chargeonce.AttemptSucceeded && providerPaymentID == "":
		return Settlement{}, fmt.Errorf("store: settle attempt %s: a succeeded attempt needs the provider payment ID", key)
	case settledAt.IsZero():
		return Settlement{}, fmt.Errorf("store: settle attempt %s: the time is missing", key)
	}
	var settled Settlement
	err := s.txs.inTx(ctx, true, func(q querier) error {
		type settledAttempt struct {
			orderID int64
			amount  chargeonce.Money
			capture chargeonce.CaptureMode
		}
		a, err := queryOne(ctx, q, func(r rows) (settledAttempt, error) {
			var a settledAttempt
			return a, r.Scan(&a.orderID, &a.amount.Minor, &a.amount.Currency, &a.capture)
		}, `UPDATE payment_attempts SET status = $2, provider_payment_id = $3, settled_at = $4
			WHERE idempotency_key = $1 AND status = 'open' RETURNING order_id, amount_minor, currency, capture_mode`,
			key, string(status), nullIfEmpty(providerPaymentID), s.t(settledAt))
		paidBy := func() (err error) {
			settled.OrderPaidBy, err = s.orderPaidBy(ctx, q, key)
			return err
		}
		if errors.Is(err, ErrNotFound) {
			// Either already terminal, which is an answer, or unknown.
			return paidBy()
		}
		if err != nil {
			return err
		}
		if status == chargeonce.AttemptSucceeded && a.capture.Manual() {
			// Rolled back: the order would be paid by a hold that took no
			// money.
			return errors.New("a manual capture's attempt succeeds with its hold, by SettleAuthorization")
		}
		settled.Changed = true
		next := chargeonce.NextOrderStatus(chargeonce.OrderPaymentPending,
			chargeonce.OrderEvent{Kind: chargeonce.OrderAttemptSettled, Attempt: status})
		if next == chargeonce.OrderPaymentPending {
			// Failed: a human reviews it before the merchant hears of it.
			// The order is left as it is.
			return paidBy()
		}
		var orderPaymentID any
		if next == chargeonce.OrderPaid {
			orderPaymentID = providerPaymentID
		}
		// NextOrderStatus moves only a payment_pending order when its
		// attempt settles. One statement applies it to that status, numbers
		// the event (see appendEvent) and, without a read first, leaves an
		// order in any other status as it is, which then tells its status
		// in the event.
		var charge string
		n, err := queryOne(ctx, q, func(r rows) (numbered, error) {
			var n numbered
			return n, r.Scan(&n.sequence, &n.status, &charge)
		}, `UPDATE orders SET
				status = CASE WHEN status = 'payment_pending' THEN $2 ELSE status END,
				provider_payment_id = CASE WHEN status = 'payment_pending' THEN COALESCE($3, provider_payment_id) ELSE provider_payment_id END,
				updated_at = CASE WHEN status = 'payment_pending' THEN $4 ELSE updated_at END,
				event_sequence = event_sequence + 1
			WHERE id = $1 RETURNING event_sequence, status, COALESCE(provider_payment_id, '')`,
			a.orderID, string(next), orderPaymentID, s.t(settledAt))
		if err != nil {
			return err
		}
		settled.OrderPaidBy = paidCharge(chargeonce.OrderStatus(n.status), charge)
		typ, _ := paymentEventType(status)
		return s.insertEvent(ctx, q, newEvent{typ: typ, orderID: a.orderID, attemptKey: key, amount: a.amount,
			providerID: providerPaymentID, status: string(status), at: settledAt}, n)
	})
	if err != nil {
		return Settlement{}, fmt.Errorf("store: settle attempt %s as %s: %w", key, status, err)
	}
	return settled, nil
}

func (s *db) OpenAttemptStats(ctx context.Context) (int, time.Time, error) {
	return s.openStats(ctx, attemptIntents)
}

// openStats counts the open rows of it.table and finds the oldest one's
// creation time (the zero time when none is open).
func (s *db) openStats(ctx context.Context, it intentTables) (int, time.Time, error) {
	type stats struct {
		open   int64
		oldest timestamp
	}
	var st stats
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		st, err = queryOne(ctx, q, func(r rows) (stats, error) {
			var st stats
			return st, r.Scan(&st.open, &st.oldest)
		}, `SELECT count(*), min(created_at) FROM `+it.table+` WHERE status = '`+it.open+`'`)
		return err
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: open %s stats: %w", it.what, err)
	}
	return int(st.open), st.oldest.t, nil
}

// orderPaidBy is Settlement.OrderPaidBy of the order of the attempt key.
func (s *db) orderPaidBy(ctx context.Context, q querier, key string) (string, error) {
	o, err := queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders
		WHERE id = (SELECT order_id FROM payment_attempts WHERE idempotency_key = $1)`, key)
	return paidCharge(o.Status, o.ProviderPaymentID), err
}

// paidCharge is the charge that paid an order in status with charge on
// record: none unless it is paid, since an authorized order names the
// charge of a hold, which took no money.
func paidCharge(status chargeonce.OrderStatus, charge string) string {
	if !status.Paid() {
		return ""
	}
	return charge
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// rekeyBatch bounds the rows one transaction of RekeyCardHashes re-keys, so
// that checkouts wait for no long write lock.
const rekeyBatch = 500

func (s *db) RekeyCardHashes(ctx context.Context, rekey func(legacy string) (string, error)) (int, error) {
	total := 0
	for {
		last := false
		err := s.txs.inTx(ctx, true, func(q querier) error {
			type row struct{ key, hash string }
			legacy, err := queryAll(ctx, q, func(r rows) (row, error) {
				var x row
				return x, r.Scan(&x.key, &x.hash)
			}, `SELECT idempotency_key, card_hash FROM payment_attempts WHERE NOT card_hash_keyed ORDER BY idempotency_key LIMIT $1`, rekeyBatch)
			if err != nil {
				return err
			}
			for _, x := range legacy {
				keyed, err := rekey(x.hash)
				if err != nil {
					return errCorrupt("attempt", x.key, err)
				}
				// The condition keeps a row that another process re-keyed
				// meanwhile from being re-keyed twice.
				n, err := q.exec(ctx, `UPDATE payment_attempts SET card_hash = $1, card_hash_keyed = true
					WHERE idempotency_key = $2 AND NOT card_hash_keyed`, keyed, x.key)
				if err != nil {
					return err
				}
				total += int(n)
			}
			last = len(legacy) < rekeyBatch
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("store: re-key card hashes: %w", err)
		}
		if last {
			return total, nil
		}
	}
}
