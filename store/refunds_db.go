package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"chargeonce"
)

// MaxChargeIDLength bounds a charge id; providers' ids are far shorter.
const MaxChargeIDLength = 255

const refundColumns = `idempotency_key, COALESCE(order_id, 0), charge_id, amount_minor, currency, reason, origin, merchant_reference,
	status, COALESCE(provider_refund_id, ''), failure_reason, COALESCE(request_key, ''), COALESCE(request_fingerprint, ''),
	workflow_started, created_at, last_checked_at, settled_at, provider`

func scanRefund(r rows) (Refund, error) {
	var (
		f                         Refund
		minor                     int64
		currency, origin, status  string
		created, checked, settled timestamp
	)
	if err := r.Scan(&f.Key, &f.OrderID, &f.ChargeID, &minor, &currency, &f.Reason, &origin, &f.MerchantReference,
		&status, &f.ProviderRefundID, &f.FailureReason, &f.RequestKey, &f.RequestFingerprint,
		&f.WorkflowStarted, &created, &checked, &settled, &f.Provider); err != nil {
		return Refund{}, err
	}
	var err error
	if f.Amount, err = chargeonce.NewMoney(minor, currency); err != nil {
		return Refund{}, errCorrupt("refund", f.Key, err)
	}
	if f.Origin = chargeonce.RefundOrigin(origin); !f.Origin.Valid() {
		return Refund{}, errCorrupt("refund", f.Key, fmt.Errorf("unknown origin %q", origin))
	}
	if f.Status = chargeonce.RefundStatus(status); !f.Status.Valid() {
		return Refund{}, errCorrupt("refund", f.Key, fmt.Errorf("unknown status %q", status))
	}
	if f.CreatedAt, err = created.required("created_at"); err != nil {
		return Refund{}, errCorrupt("refund", f.Key, err)
	}
	if checked.valid {
		f.LastCheckedAt = &checked.t
	}
	if settled.valid {
		f.SettledAt = &settled.t
	}
	return f, nil
}

func (n NewRefund) validate() error {
	switch {
	case n.OrderID < 0:
		return fmt.Errorf("order ID %d is negative", n.OrderID)
	case n.Origin == chargeonce.RefundLateCharge:
		return errors.New("a late charge is refunded by RecordLateCharge, not by a refund request")
	case !n.Origin.Valid():
		return fmt.Errorf("unknown origin %q", n.Origin)
	case n.OrderID == 0 && n.Origin != chargeonce.RefundByOperator:
		return errors.New("only an operator refunds a charge without naming its order")
	case n.OrderID == 0 && n.ChargeID == "":
		return errors.New("a refund names its order, its charge, or both")
	case len(n.ChargeID) > MaxChargeIDLength:
		return fmt.Errorf("the charge ID has %d bytes; at most %d are allowed", len(n.ChargeID), MaxChargeIDLength)
	case n.Amount < 0:
		return fmt.Errorf("amount %d is negative", n.Amount)
	case !chargeonce.ValidKey(n.Key):
		return fmt.Errorf("key %q is not a lower-case UUID", n.Key)
	case !chargeonce.ValidReferencePrefix(n.ReferencePrefix):
		return fmt.Errorf("reference prefix %q must be a lower-case letter followed by lower-case letters, digits or underscores", n.ReferencePrefix)
	case (n.RequestKey == "") != (n.RequestFingerprint == ""):
		return errors.New("the request key and the request fingerprint come together or not at all")
	case len(n.RequestKey) > MaxRequestKeyLength:
		return fmt.Errorf("the request key has %d bytes; at most %d are allowed", len(n.RequestKey), MaxRequestKeyLength)
	case n.RequestFingerprint != "" && !validHexSHA256(n.RequestFingerprint):
		return fmt.Errorf("request fingerprint %q is not a lower-case hex SHA-256", n.RequestFingerprint)
	case n.Now.IsZero():
		return errors.New("creation time is missing")
	}
	if err := chargeonce.ValidateText(n.ChargeID); err != nil {
		return fmt.Errorf("the charge ID %w", err)
	}
	if err := chargeonce.ValidateText(n.RequestKey); err != nil {
		return fmt.Errorf("the request key %w", err)
	}
	if err := chargeonce.ValidateText(n.Reason); err != nil {
		return fmt.Errorf("the reason %w", err)
	}
	return nil
}

// what names the refund's target in errors.
func (n NewRefund) what() string {
	if n.OrderID == 0 {
		return "charge " + n.ChargeID
	}
	return fmt.Sprintf("order %d", n.OrderID)
}

func (s *db) StartRefund(ctx context.Context, n NewRefund) (Refund, RefundDecision, error) {
	if err := n.validate(); err != nil {
		return Refund{}, "", fmt.Errorf("store: new refund: %w", err)
	}
	var (
		f Refund
		d RefundDecision
	)
	err := s.txs.inTx(ctx, true, func(q querier) error {
		var err error
		f, d, err = s.startRefund(ctx, q, n)
		return err
	})
	if err != nil {
		return Refund{}, "", fmt.Errorf("store: refund of %s: %w", n.what(), err)
	}
	return f, d, nil
}

func (s *db) startRefund(ctx context.Context, q querier, n NewRefund) (Refund, RefundDecision, error) {
	// The lock comes first, so that a request that waited for it sees the
	// refund its twin committed meanwhile, and is replayed rather than
	// counted against the charge.
	c, err := s.lockRefundableCharge(ctx, q, n.OrderID, n.ChargeID)
	if errors.Is(err, ErrNotRefundable) {
		// A request key that asked for a refund before is answered as
		// such, whatever it names now: a key sent again with another
		// request is key_reused, as it is for a refundable target.
		if prior, d, found, keyErr := s.requestKeyDecision(ctx, q, n); found || keyErr != nil {
			return prior, d, keyErr
		}
	}
	if err != nil {
		return Refund{}, "", err
	}
	for range getOrStartPasses {
		if prior, d, found, err := s.requestKeyDecision(ctx, q, n); found || err != nil {
			return prior, d, err
		}
		amount, err := refundAmount(ctx, q, c, n.Amount)
		if err != nil {
			return Refund{}, "", err
		}
		f := Refund{
			RefundIntent: chargeonce.RefundIntent{
				Key:               n.Key,
				OrderID:           c.OrderID,
				ChargeID:          c.ID,
				Amount:            amount,
				Reason:            n.Reason,
				MerchantReference: chargeonce.RefundReference(n.ReferencePrefix, n.Key),
				Origin:            n.Origin,
				CreatedAt:         n.Now,
				Provider:          c.Provider,
			},
			RequestKey:         n.RequestKey,
			RequestFingerprint: n.RequestFingerprint,
		}
		inserted, err := s.insertRefund(ctx, q, f)
		if err != nil {
			return Refund{}, "", err
		}
		if inserted {
			f, err = queryOne(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds WHERE idempotency_key = $1`, n.Key)
			return f, RefundCreated, err
		}
		// A refund with the request key, for another order or charge, was
		// committed meanwhile: read it again and decide on it.
	}
	return Refund{}, "", fmt.Errorf("refunds with request key %q kept appearing and settling; gave up after %d reads", n.RequestKey, getOrStartPasses)
}

// requestKeyDecision finds the live refund (any but not_processed) that n's
// request key asked for before, if any, and decides on it: replayed when
// its fingerprint is n's, key_reused otherwise.
func (s *db) requestKeyDecision(ctx context.Context, q querier, n NewRefund) (Refund, RefundDecision, bool, error) {
	prior, found, err := priorRequest(ctx, q, refundIntents, refundColumns, scanRefund, n.RequestKey)
	switch {
	case !found || err != nil:
		return Refund{}, "", false, err
	case prior.RequestFingerprint == n.RequestFingerprint:
		return prior, RefundReplayed, true, nil
	default:
		return prior, RefundKeyReused, true, nil
	}
}

// priorRequest finds the live row (any but not_processed) of it.table, read
// as columns by scan, that an API request with requestKey asked for
// before; found is false when there is none, or no request key. A
// not_processed row did nothing, so the key is free again.
func priorRequest[T any](ctx context.Context, q querier, it intentTables, columns string, scan func(rows) (T, error), requestKey string) (prior T, found bool, err error) {
	if requestKey == "" {
		return prior, false, nil
	}
	prior, err = queryOne(ctx, q, scan,
		`SELECT `+columns+` FROM `+it.table+` WHERE request_key = $1 AND status <> 'not_processed'`, requestKey)
	if errors.Is(err, ErrNotFound) {
		return prior, false, nil
	}
	return prior, err == nil, err
}

// lockRefundableCharge finds the charge a refund is for and locks it: the
// order's paying charge when chargeID is empty, else chargeID, which must
// be a charge of the order when orderID is set. The order, if named, is
// locked first, then the charge (dialect.lockCharge), so that the refunds
// of one charge are decided one at a time, whoever asks.
func (s *db) lockRefundableCharge(ctx context.Context, q querier, orderID int64, chargeID string) (RefundableCharge, error) {
	var c RefundableCharge
	if orderID != 0 {
		order, err := queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`+s.d.lockOrder, orderID)
		if err != nil {
			return RefundableCharge{}, err
		}
		switch {
		case chargeID == "" || chargeID == order.ProviderPaymentID:
			if !order.Status.Paid() {
				return RefundableCharge{}, fmt.Errorf("%w: the order is %s; it was never paid", ErrNotRefundable, order.Status)
			}
			c = RefundableCharge{ID: order.ProviderPaymentID, OrderID: order.ID}
			if c.Amount, _, err = chargedAmount(ctx, q, order); err != nil {
				return RefundableCharge{}, err
			}
			held, err := heldCharge(ctx, q, c.ID, order.ID)
			if err != nil && !errors.Is(err, ErrNotRefundable) {
				return RefundableCharge{}, err
			}
			c.Provider = held.Provider
		default:
			c, err = heldCharge(ctx, q, chargeID, orderID)
			if errors.Is(err, ErrNotRefundable) {
				return RefundableCharge{}, fmt.Errorf("%w: charge %s is not a charge of the order", ErrNotRefundable, chargeID)
			}
			if err != nil {
				return RefundableCharge{}, err
			}
		}
	} else {
		var err error
		if c, err = heldCharge(ctx, q, chargeID, 0); err != nil {
			return RefundableCharge{}, err
		}
	}
	return c, s.lockCharge(ctx, q, c.ID)
}

// lockCharge takes the dialect's lock on a charge id; it comes after any
// lock on the charge's order, never before.
func (s *db) lockCharge(ctx context.Context, q querier, chargeID string) error {
	if s.d.lockCharge == "" {
		return nil
	}
	_, err := q.exec(ctx, s.d.lockCharge, chargeID)
	return err
}

// heldCharge finds a charge that the books hold: a succeeded attempt's, a
// late charge, or, when orderID is 0, a charge line of a settlement report
// (which belongs to no order that the store knows, and is held by the
// provider whose report shows it). A nonzero orderID
// finds the charge among that order's alone, so that the provider found is
// the one its attempt went to. It returns ErrNotRefundable for any other.
// The hold of a manual capture is a charge only once captured, for what
// the capture took: a hold authorized, voided or expired took no money.
func heldCharge(ctx context.Context, q querier, chargeID string, orderID int64) (RefundableCharge, error) {
	scan := func(r rows) (RefundableCharge, error) {
		var (
			c        RefundableCharge
			minor    int64
			currency string
		)
		if err := r.Scan(&c.OrderID, &minor, &currency, &c.Provider); err != nil {
			return RefundableCharge{}, err
		}
		c.ID = chargeID
		var err error
		if c.Amount, err = chargeonce.NewMoney(minor, currency); err != nil {
			return RefundableCharge{}, errCorrupt("charge", chargeID, err)
		}
		return c, nil
	}
	queries := []string{
		`SELECT a.order_id, CASE WHEN h.status = 'captured' THEN h.captured_minor ELSE a.amount_minor END, a.currency, a.provider
		FROM payment_attempts a LEFT JOIN holds h ON h.attempt_key = a.idempotency_key
		WHERE a.provider_payment_id = $1 AND a.status = 'succeeded' AND (a.capture_mode = 'automatic' OR h.status = 'captured')`,
		`SELECT l.order_id, l.amount_minor, l.currency, a.provider FROM late_charges l
		JOIN payment_attempts a ON a.idempotency_key = l.attempt_key WHERE l.charge_id = $1`,
	}
	args := []any{chargeID}
	if orderID != 0 {
		for i := range queries {
			queries[i] += ` AND a.order_id = $2`
		}
		args = append(args, orderID)
	} else {
		queries = append(queries, `SELECT 0, gross_minor, currency, provider FROM settlement_lines
		WHERE charge_id = $1 AND reporting_category = 'charge' AND problem = '' AND gross_minor > 0
		ORDER BY report_date, line_no`)
	}
	for _, query := range queries {
		c, err := queryOne(ctx, q, scan, query, args...)
		if !errors.Is(err, ErrNotFound) {
			return c, err
		}
	}
	return RefundableCharge{}, fmt.Errorf("%w: the books hold no charge %s", ErrNotRefundable, chargeID)
}

func (s *db) RefundableCharge(ctx context.Context, chargeID string) (RefundableCharge, error) {
	var c RefundableCharge
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		c, err = heldCharge(ctx, q, chargeID, 0)
		return err
	})
	if err != nil {
		return RefundableCharge{}, fmt.Errorf("store: charge %s: %w", chargeID, err)
	}
	return c, nil
}

// refundAmount checks a refund of minor units (0: all that remains) of a
// locked charge against what the charge can still refund: its amount less
// its refunds that hold.
func refundAmount(ctx context.Context, q querier, c RefundableCharge, minor int64) (chargeonce.Money, error) {
	held, err := queryOne(ctx, q, scanInt64,
		`SELECT COALESCE(SUM(amount_minor), 0) FROM refunds WHERE charge_id = $1 AND status IN ('pending', 'succeeded')`, c.ID)
	if err != nil {
		return chargeonce.Money{}, err
	}
	amount, ok := chargeonce.RefundAmount(c.Amount, held, minor)
	if !ok {
		return chargeonce.Money{}, fmt.Errorf("%w: charge %s of %s can still refund %s",
			ErrRefundExceedsCharge, c.ID, c.Amount, chargeonce.RefundLimit(c.Amount, held))
	}
	return amount, nil
}

// insertRefund inserts f, pending, and reports false when a refund that
// holds f's request key is there already (which a concurrent request may
// have committed since it was looked for).
func (s *db) insertRefund(ctx context.Context, q querier, f Refund) (bool, error) {
	var orderID any
	if f.OrderID != 0 {
		orderID = f.OrderID
	}
	inserted, err := q.exec(ctx,
		`INSERT INTO refunds (idempotency_key, order_id, charge_id, amount_minor, currency, reason, origin, merchant_reference,
			status, request_key, request_fingerprint, workflow_started, created_at, provider)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10, false, $11, $12)
		ON CONFLICT (request_key) WHERE status <> 'not_processed' DO NOTHING`,
		f.Key, orderID, f.ChargeID, f.Amount.Minor, f.Amount.Currency, f.Reason, string(f.Origin), f.MerchantReference,
		nullIfEmpty(f.RequestKey), nullIfEmpty(f.RequestFingerprint), s.t(f.CreatedAt), f.Provider)
	if s.d.uniqueViolation(err) {
		return false, fmt.Errorf("%w: key %s or its merchant reference already belongs to another refund", ErrConflict, f.Key)
	}
	return inserted == 1, err
}

func (s *db) GetRefund(ctx context.Context, key string) (Refund, error) {
	var f Refund
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		if f, err = queryOne(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds WHERE idempotency_key = $1`, key); err != nil {
			return err
		}
		logs, err := loadRequests(ctx, q, refundIntents, `idempotency_key`, key)
		f.Requests = logs[key]
		return err
	})
	if err != nil {
		return Refund{}, fmt.Errorf("store: refund %s: %w", key, err)
	}
	return f, nil
}

func (s *db) RefundByReference(ctx context.Context, merchantReference string) (Refund, error) {
	var f Refund
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		f, err = queryOne(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds WHERE merchant_reference = $1`, merchantReference)
		return err
	})
	if err != nil {
		return Refund{}, fmt.Errorf("store: refund with merchant reference %q: %w", merchantReference, err)
	}
	return f, nil
}

func (s *db) OrderRefunds(ctx context.Context, orderID int64) ([]Refund, error) {
	refunds, err := ofOrder(ctx, s, "refunds", refundColumns, scanRefund, orderID)
	if err != nil {
		return nil, fmt.Errorf("store: refunds of order %d: %w", orderID, err)
	}
	return refunds, nil
}

// ofOrder reads the rows of table (refunds or hold_moves) that belong to
// the order, oldest first; ErrNotFound when there is no such order.
func ofOrder[T any](ctx context.Context, s *db, table, columns string, scan func(rows) (T, error), orderID int64) ([]T, error) {
	var out []T
	err := s.txs.inTx(ctx, false, func(q querier) error {
		if _, err := queryOne(ctx, q, scanInt64, `SELECT 1 FROM orders WHERE id = $1`, orderID); err != nil {
			return err
		}
		var err error
		out, err = queryAll(ctx, q, scan,
			`SELECT `+columns+` FROM `+table+` WHERE order_id = $1 ORDER BY created_at, idempotency_key`, orderID)
		return err
	})
	return out, err
}

func (s *db) MarkRefundWorkflowStarted(ctx context.Context, key string) error {
	return s.markWorkflowStarted(ctx, refundIntents, key)
}

func (s *db) UnstartedRefunds(ctx context.Context, createdBefore time.Time, limit int) ([]Refund, error) {
	return unstarted(ctx, s, refundIntents, refundColumns, scanRefund, createdBefore, limit)
}

func (s *db) MarkRefundChecked(ctx context.Context, key string, at time.Time) error {
	return s.markChecked(ctx, refundIntents, key, at)
}

func (s *db) OpenRefundStats(ctx context.Context) (int, time.Time, error) {
	return s.openStats(ctx, refundIntents)
}

func (s *db) SettleRefund(ctx context.Context, key string, status chargeonce.RefundStatus, providerRefundID, failureReason string, at time.Time) (bool, error) {
	switch {
	case !chargeonce.ValidKey(key):
		return false, fmt.Errorf("store: settle refund: key %q is not a lower-case UUID", key)
	case !status.Settled():
		return false, fmt.Errorf("store: settle refund %s: status %q is not a settled one", key, status)
	case status == chargeonce.RefundSucceeded && providerRefundID == "":
		return false, fmt.Errorf("store: settle refund %s: a succeeded refund needs the provider's refund ID", key)
	case len(providerRefundID) > MaxChargeIDLength:
		return false, fmt.Errorf("store: settle refund %s: the provider's refund ID has %d bytes; at most %d are allowed", key, len(providerRefundID), MaxChargeIDLength)
	case at.IsZero():
		return false, fmt.Errorf("store: settle refund %s: the time is missing", key)
	}
	if err := chargeonce.ValidateText(providerRefundID); err != nil {
		return false, fmt.Errorf("store: settle refund %s: the provider's refund ID %w", key, err)
	}
	if err := chargeonce.ValidateText(failureReason); err != nil {
		return false, fmt.Errorf("store: settle refund %s: the failure reason %w", key, err)
	}
	var changed bool
	err := s.txs.inTx(ctx, true, func(q querier) error {
		// The only moves: out of pending, and from succeeded to failed. A
		// later failure keeps the time the refund first settled.
		type moved struct {
			orderID              int64
			chargeID, providerID string
			amount               chargeonce.Money
		}
		m, err := queryOne(ctx, q, func(r rows) (moved, error) {
			var m moved
			return m, r.Scan(&m.orderID, &m.chargeID, &m.providerID, &m.amount.Minor, &m.amount.Currency)
		}, `UPDATE refunds SET status = $2, provider_refund_id = COALESCE($3, provider_refund_id), failure_reason = $4,
				settled_at = COALESCE(settled_at, $5)
			WHERE idempotency_key = $1 AND (status = 'pending' OR (status = 'succeeded' AND $2 = 'failed'))
			RETURNING COALESCE(order_id, 0), charge_id, COALESCE(provider_refund_id, ''), amount_minor, currency`,
			key, string(status), nullIfEmpty(providerRefundID), failureReason, s.t(at))
		if errors.Is(err, ErrNotFound) {
			// Either settled already, which is an answer, or unknown.
			_, err = queryOne(ctx, q, scanInt64, `SELECT 1 FROM refunds WHERE idempotency_key = $1`, key)
			return err
		}
		if err != nil {
			return err
		}
		changed = true
		if m.orderID == 0 {
			// A charge of no order: no merchant's order to tell.
			return nil
		}
		if err := s.setOrderStatusAfterRefunds(ctx, q, m.orderID, m.chargeID, at); err != nil {
			return err
		}
		return s.appendEvent(ctx, q, newEvent{typ: refundEventType(status), orderID: m.orderID, refundKey: key,
			amount: m.amount, providerID: m.providerID, chargeID: m.chargeID, status: string(status),
			failure: failureReason, at: at})
	})
	if err != nil {
		return false, fmt.Errorf("store: settle refund %s as %s: %w", key, status, err)
	}
	return changed, nil
}

// setOrderStatusAfterRefunds sets a paid order's status from the
// succeeded refunds of chargeID, when that is the charge that paid it;
// the refund of any other charge of the order (a late one) leaves it. A
// captured hold's refunds count against what the capture took.
func (s *db) setOrderStatusAfterRefunds(ctx context.Context, q querier, orderID int64, chargeID string, at time.Time) error {
	// The order is locked before the refunds are summed, so that two
	// refunds settling at once are summed one after the other.
	order, err := queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`+s.d.lockOrder, orderID)
	if err != nil {
		return err
	}
	if !order.Status.Paid() || order.ProviderPaymentID != chargeID {
		return nil
	}
	refunded, err := queryOne(ctx, q, scanInt64,
		`SELECT COALESCE(SUM(amount_minor), 0) FROM refunds WHERE charge_id = $1 AND status = 'succeeded'`, chargeID)
	if err != nil {
		return err
	}
	charged, captured, err := chargedAmount(ctx, q, order)
	if err != nil {
		return err
	}
	next := chargeonce.NextOrderStatus(order.Status, chargeonce.OrderEvent{
		Kind: chargeonce.OrderRefundsSettled, Charged: charged.Minor, Refunded: refunded, Captured: captured})
	if next == order.Status {
		return nil
	}
	_, err = q.exec(ctx, `UPDATE orders SET status = $2, updated_at = $3 WHERE id = $1`, orderID, string(next), s.t(at))
	return err
}

func (c LateCharge) validate() error {
	switch {
	case !chargeonce.ValidKey(c.AttemptKey):
		return fmt.Errorf("attempt key %q is not a lower-case UUID", c.AttemptKey)
	case c.ChargeID == "":
		return errors.New("the charge ID is empty")
	case len(c.ChargeID) > MaxChargeIDLength:
		return fmt.Errorf("the charge ID has %d bytes; at most %d are allowed", len(c.ChargeID), MaxChargeIDLength)
	case !chargeonce.ValidKey(c.RefundKey):
		return fmt.Errorf("refund key %q is not a lower-case UUID", c.RefundKey)
	case !chargeonce.ValidReferencePrefix(c.ReferencePrefix):
		return fmt.Errorf("reference prefix %q must be a lower-case letter followed by lower-case letters, digits or underscores", c.ReferencePrefix)
	case c.Now.IsZero():
		return errors.New("the time it was found is missing")
	}
	if err := chargeonce.ValidateText(c.ChargeID); err != nil {
		return fmt.Errorf("the charge ID %w", err)
	}
	if _, err := chargeonce.NewMoney(c.Amount.Minor, c.Amount.Currency); err != nil {
		return err
	}
	return nil
}

func (s *db) RecordLateCharge(ctx context.Context, c LateCharge) (chargeonce.LateChargeDecision, *Refund, error) {
	if err := c.validate(); err != nil {
		return "", nil, fmt.Errorf("store: late charge: %w", err)
	}
	var (
		d chargeonce.LateChargeDecision
		f *Refund
	)
	err := s.txs.inTx(ctx, true, func(q querier) error {
		var err error
		d, f, err = s.recordLateCharge(ctx, q, c)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("store: late charge %s of attempt %s: %w", c.ChargeID, c.AttemptKey, err)
	}
	return d, f, nil
}

// lateAttempt is what the repair of a late charge reads of its attempt: its
// order, and the provider that holds the charge, which refunds it.
type lateAttempt struct {
	orderID  int64
	provider string
}

func (s *db) recordLateCharge(ctx context.Context, q querier, c LateCharge) (chargeonce.LateChargeDecision, *Refund, error) {
	attempt, err := queryOne(ctx, q, func(r rows) (lateAttempt, error) {
		var a lateAttempt
		return a, r.Scan(&a.orderID, &a.provider)
	}, `SELECT order_id, provider FROM payment_attempts WHERE idempotency_key = $1`, c.AttemptKey)
	if err != nil {
		return "", nil, err
	}
	orderID := attempt.orderID
	order, err := queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`+s.d.lockOrder, orderID)
	if err != nil {
		return "", nil, err
	}
	type found struct {
		orderID   int64
		decision  chargeonce.LateChargeDecision
		refundKey string
	}
	prior, err := queryOne(ctx, q, func(r rows) (found, error) {
		var x found
		return x, r.Scan(&x.orderID, &x.decision, &x.refundKey)
	}, `SELECT order_id, decision, COALESCE(refund_key, '') FROM late_charges WHERE charge_id = $1`, c.ChargeID)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return "", nil, err
	case prior.orderID != orderID:
		return "", nil, fmt.Errorf("%w: the charge was recorded for order %d", ErrConflict, prior.orderID)
	}
	facts := chargeonce.LateChargeFacts{
		OrderID: orderID, OrderStatus: order.Status, OrderAmount: order.Amount, OrderPaidBy: order.ProviderPaymentID,
		ChargeID: c.ChargeID, ChargeAmount: c.Amount, Decided: prior.decision,
	}
	decision, err := facts.Decide()
	if err != nil || decision == chargeonce.LateChargeKnown {
		return decision, nil, err
	}
	if decision == chargeonce.LateChargeAdopted {
		return decision, nil, s.adoptLateCharge(ctx, q, c, order)
	}
	if prior.decision == chargeonce.LateChargeRefunded {
		if prior.refundKey == "" {
			// Refunds of others had returned the whole charge already.
			return decision, nil, nil
		}
		f, err := queryOne(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds WHERE idempotency_key = $1`, prior.refundKey)
		if err != nil {
			return "", nil, err
		}
		if f.Status != chargeonce.RefundNotProcessed {
			return decision, &f, nil
		}
		// Nothing was refunded under that key: the charge gets a new
		// refund.
	}
	f, err := s.refundLateCharge(ctx, q, c, order, attempt.provider, facts.RefundReason())
	if err != nil {
		return "", nil, err
	}
	var refundKey any
	if f != nil {
		refundKey = f.Key
	}
	if prior.decision != "" {
		_, err = q.exec(ctx, `UPDATE late_charges SET refund_key = $2 WHERE charge_id = $1`, c.ChargeID, refundKey)
	} else {
		_, err = q.exec(ctx,
			`INSERT INTO late_charges (charge_id, attempt_key, order_id, amount_minor, currency, decision, refund_key, found_at)
			VALUES ($1, $2, $3, $4, $5, 'refunded', $6, $7)`,
			c.ChargeID, c.AttemptKey, orderID, c.Amount.Minor, c.Amount.Currency, refundKey, s.t(c.Now))
	}
	return decision, f, err
}

// adoptLateCharge makes a late charge pay its locked order: the customer's
// money was taken for this order, so the merchant delivers. The attempt
// keeps its status; late_charges says why the order is paid.
func (s *db) adoptLateCharge(ctx context.Context, q querier, c LateCharge, order Order) error {
	next := chargeonce.NextOrderStatus(order.Status, chargeonce.OrderEvent{Kind: chargeonce.OrderLateChargeAdopted})
	n, err := queryOne(ctx, q, scanNumbered, `UPDATE orders SET status = $4, provider_payment_id = $2, updated_at = $3,
			event_sequence = event_sequence + 1
		WHERE id = $1 RETURNING event_sequence, status`,
		order.ID, c.ChargeID, s.t(c.Now), string(next))
	if err != nil {
		return err
	}
	if _, err := q.exec(ctx,
		`INSERT INTO late_charges (charge_id, attempt_key, order_id, amount_minor, currency, decision, refund_key, found_at)
		VALUES ($1, $2, $3, $4, $5, 'adopted', NULL, $6)`,
		c.ChargeID, c.AttemptKey, order.ID, c.Amount.Minor, c.Amount.Currency, s.t(c.Now)); err != nil {
		return err
	}
	// To the merchant, the attempt whose charge paid the order succeeded,
	// whatever status it settled with before.
	return s.insertEvent(ctx, q, newEvent{typ: chargeonce.EventPaymentSucceeded, orderID: order.ID, attemptKey: c.AttemptKey,
		amount: c.Amount, providerID: c.ChargeID, status: string(chargeonce.AttemptSucceeded), at: c.Now}, n)
}

// refundLateCharge stores the repair's refund of all that a late charge of
// a locked order can still refund; nil when refunds that hold return the
// whole charge already.
func (s *db) refundLateCharge(ctx context.Context, q querier, c LateCharge, order Order, provider, reason string) (*Refund, error) {
	if err := s.lockCharge(ctx, q, c.ChargeID); err != nil {
		return nil, err
	}
	charge := RefundableCharge{ID: c.ChargeID, Amount: c.Amount, OrderID: order.ID}
	amount, err := refundAmount(ctx, q, charge, 0)
	if errors.Is(err, ErrRefundExceedsCharge) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := Refund{RefundIntent: chargeonce.RefundIntent{
		Key:               c.RefundKey,
		OrderID:           order.ID,
		ChargeID:          c.ChargeID,
		Amount:            amount,
		Reason:            reason,
		MerchantReference: chargeonce.RefundReference(c.ReferencePrefix, c.RefundKey),
		Origin:            chargeonce.RefundLateCharge,
		CreatedAt:         c.Now,
		Provider:          provider,
	}}
	if _, err := s.insertRefund(ctx, q, f); err != nil {
		return nil, err
	}
	f, err = queryOne(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds WHERE idempotency_key = $1`, c.RefundKey)
	return &f, err
}
