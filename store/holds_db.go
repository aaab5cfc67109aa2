package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"chargeonce"
)

// moveIntents are the captures and voids of holds: one log serves both
// operations, since a move's key tells which it is.
var moveIntents = intentTables{what: "move", table: "hold_moves", open: "pending", requests: "hold_move_requests"}

// holdColumns are read FROM holdsJoin: the provider is the attempt's.
const holdColumns = `h.attempt_key, h.order_id, h.charge_id, a.provider, h.amount_minor, h.currency, h.captured_minor, h.status,
	h.capture_before, h.deadline, h.on_deadline, h.authorized_at, h.ended_at`

const holdsJoin = ` FROM holds h JOIN payment_attempts a ON a.idempotency_key = h.attempt_key`

func scanHold(r rows) (Hold, error) {
	var (
		h                                   Hold
		minor                               int64
		currency, status, onDeadline        string
		before, deadline, authorized, ended timestamp
	)
	if err := r.Scan(&h.AttemptKey, &h.OrderID, &h.ChargeID, &h.Provider, &minor, &currency, &h.Captured, &status,
		&before, &deadline, &onDeadline, &authorized, &ended); err != nil {
		return Hold{}, err
	}
	var err error
	if h.Amount, err = chargeonce.NewMoney(minor, currency); err != nil {
		return Hold{}, errCorrupt("hold", h.AttemptKey, err)
	}
	if h.Status = chargeonce.HoldStatus(status); !h.Status.Valid() {
		return Hold{}, errCorrupt("hold", h.AttemptKey, fmt.Errorf("unknown status %q", status))
	}
	if h.OnDeadline = chargeonce.DeadlineAction(onDeadline); h.OnDeadline == "" || !h.OnDeadline.Valid() {
		return Hold{}, errCorrupt("hold", h.AttemptKey, fmt.Errorf("unknown deadline action %q", onDeadline))
	}
	if h.Deadline, err = deadline.required("deadline"); err != nil {
		return Hold{}, errCorrupt("hold", h.AttemptKey, err)
	}
	if h.AuthorizedAt, err = authorized.required("authorized_at"); err != nil {
		return Hold{}, errCorrupt("hold", h.AttemptKey, err)
	}
	h.CaptureBefore = before.t
	if ended.valid {
		h.EndedAt = &ended.t
	}
	return h, nil
}

const moveColumns = `idempotency_key, kind, order_id, attempt_key, charge_id, amount_minor, currency, merchant_reference, origin,
	created_at, provider, status, decline_code, COALESCE(request_key, ''), COALESCE(request_fingerprint, ''), workflow_started,
	last_checked_at, settled_at`

func scanMove(r rows) (Move, error) {
	var (
		m                              Move
		minor                          int64
		currency, kind, origin, status string
		created, checked, settled      timestamp
	)
	if err := r.Scan(&m.Key, &kind, &m.OrderID, &m.AttemptKey, &m.ChargeID, &minor, &currency, &m.MerchantReference, &origin,
		&created, &m.Provider, &status, &m.DeclineCode, &m.RequestKey, &m.RequestFingerprint, &m.WorkflowStarted,
		&checked, &settled); err != nil {
		return Move{}, err
	}
	var err error
	if m.Amount, err = chargeonce.NewMoney(minor, currency); err != nil {
		return Move{}, errCorrupt("move", m.Key, err)
	}
	if m.Kind = chargeonce.MoveKind(kind); !m.Kind.Valid() {
		return Move{}, errCorrupt("move", m.Key, fmt.Errorf("unknown kind %q", kind))
	}
	if m.Origin = chargeonce.MoveOrigin(origin); !m.Origin.Valid() {
		return Move{}, errCorrupt("move", m.Key, fmt.Errorf("unknown origin %q", origin))
	}
	if m.Status = chargeonce.MoveStatus(status); !m.Status.Valid() {
		return Move{}, errCorrupt("move", m.Key, fmt.Errorf("unknown status %q", status))
	}
	if m.CreatedAt, err = created.required("created_at"); err != nil {
		return Move{}, errCorrupt("move", m.Key, err)
	}
	if checked.valid {
		m.LastCheckedAt = &checked.t
	}
	if settled.valid {
		m.SettledAt = &settled.t
	}
	return m, nil
}

func (h NewHold) validate() error {
	switch {
	case h.ChargeID == "":
		return errors.New("the charge ID is empty")
	case len(h.ChargeID) > MaxChargeIDLength:
		return fmt.Errorf("the charge ID has %d bytes; at most %d are allowed", len(h.ChargeID), MaxChargeIDLength)
	case h.Deadline.IsZero():
		return errors.New("the deadline is missing")
	case !h.OnDeadline.Valid():
		return fmt.Errorf("unknown deadline action %q", h.OnDeadline)
	case h.At.IsZero():
		return errors.New("the time is missing")
	}
	if err := chargeonce.ValidateText(h.ChargeID); err != nil {
		return fmt.Errorf("the charge ID %w", err)
	}
	return nil
}

func (s *db) SettleAuthorization(ctx context.Context, attemptKey string, h NewHold) (Settlement, error) {
	if !chargeonce.ValidKey(attemptKey) {
		return Settlement{}, fmt.Errorf("store: settle authorization: key %q is not a lower-case UUID", attemptKey)
	}
	if err := h.validate(); err != nil {
		return Settlement{}, fmt.Errorf("store: settle authorization of attempt %s: %w", attemptKey, err)
	}
	var settled Settlement
	err := s.txs.inTx(ctx, true, func(q querier) error {
		type authorized struct {
			orderID    int64
			amount     chargeonce.Money
			capture    chargeonce.CaptureMode
			onDeadline chargeonce.DeadlineAction
		}
		a, err := queryOne(ctx, q, func(r rows) (authorized, error) {
			var a authorized
			return a, r.Scan(&a.orderID, &a.amount.Minor, &a.amount.Currency, &a.capture, &a.onDeadline)
		}, `UPDATE payment_attempts SET status = 'succeeded', provider_payment_id = $2, settled_at = $3
			WHERE idempotency_key = $1 AND status = 'open'
			RETURNING order_id, amount_minor, currency, capture_mode, COALESCE(on_deadline, '')`,
			attemptKey, h.ChargeID, s.t(h.At))
		if errors.Is(err, ErrNotFound) {
			// Either already terminal, which is an answer, or unknown.
			settled.OrderPaidBy, err = s.orderPaidBy(ctx, q, attemptKey)
			return err
		}
		if err != nil {
			return err
		}
		// The transaction rolls back on these: the attempt stays open for
		// the caller whose bug it is to find.
		if !a.capture.Manual() {
			return fmt.Errorf("the attempt's capture mode is %s: it authorizes no hold", a.capture)
		}
		if h.OnDeadline != "" && h.OnDeadline != a.onDeadline {
			return fmt.Errorf("the hold's deadline action %s is not the attempt's, %s", h.OnDeadline, a.onDeadline)
		}
		settled.Changed = true
		var captureBefore *time.Time
		if !h.CaptureBefore.IsZero() {
			captureBefore = &h.CaptureBefore
		}
		if _, err := q.exec(ctx,
			`INSERT INTO holds (attempt_key, order_id, charge_id, amount_minor, currency, captured_minor, status,
				capture_before, deadline, on_deadline, authorized_at)
			VALUES ($1, $2, $3, $4, $5, 0, 'authorized', $6, $7, $8, $9)`,
			attemptKey, a.orderID, h.ChargeID, a.amount.Minor, a.amount.Currency, s.optionalTime(captureBefore),
			s.t(h.Deadline), string(cmp.Or(a.onDeadline, chargeonce.DeadlineVoid)), s.t(h.At)); err != nil {
			return err
		}
		order, err := s.moveOrder(ctx, q, a.orderID, chargeonce.OrderEvent{Kind: chargeonce.OrderHoldAuthorized}, h.ChargeID, h.At)
		if err != nil {
			return err
		}
		settled.OrderPaidBy = paidCharge(order.Status, order.ProviderPaymentID)
		return s.appendEvent(ctx, q, newEvent{typ: chargeonce.EventPaymentAuthorized, orderID: a.orderID, attemptKey: attemptKey,
			amount: a.amount, providerID: h.ChargeID, status: string(chargeonce.HoldAuthorized), at: h.At})
	})
	if err != nil {
		return Settlement{}, fmt.Errorf("store: settle authorization of attempt %s: %w", attemptKey, err)
	}
	return settled, nil
}

// moveOrder locks the order and moves it by e (chargeonce.NextOrderStatus),
// naming chargeID, when not empty, as the charge on record; an event that
// does not apply to its status leaves it as it is. It returns the order as
// it leaves it.
func (s *db) moveOrder(ctx context.Context, q querier, orderID int64, e chargeonce.OrderEvent, chargeID string, at time.Time) (Order, error) {
	order, err := queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`+s.d.lockOrder, orderID)
	if err != nil {
		return Order{}, err
	}
	next := chargeonce.NextOrderStatus(order.Status, e)
	if next == order.Status {
		return order, nil
	}
	return queryOne(ctx, q, scanOrder, `UPDATE orders SET status = $2, provider_payment_id = COALESCE($3, provider_payment_id),
			updated_at = $4
		WHERE id = $1 RETURNING `+orderColumns, orderID, string(next), nullIfEmpty(chargeID), s.t(at))
}

func (s *db) GetHold(ctx context.Context, attemptKey string) (Hold, error) {
	return s.hold(ctx, "hold of attempt "+attemptKey, `h.attempt_key`, attemptKey)
}

func (s *db) OrderHold(ctx context.Context, orderID int64) (Hold, error) {
	return s.hold(ctx, fmt.Sprintf("hold of order %d", orderID), `h.order_id`, orderID)
}

// hold reads the one hold whose column equals value; what names it in
// errors.
func (s *db) hold(ctx context.Context, what, column string, value any) (Hold, error) {
	var h Hold
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		h, err = queryOne(ctx, q, scanHold, `SELECT `+holdColumns+holdsJoin+` WHERE `+column+` = $1`, value)
		return err
	})
	if err != nil {
		return Hold{}, fmt.Errorf("store: %s: %w", what, err)
	}
	return h, nil
}

func (n NewMove) validate() error {
	switch {
	case n.OrderID <= 0:
		return fmt.Errorf("order ID %d is not positive", n.OrderID)
	case !n.Kind.Valid():
		return fmt.Errorf("unknown kind %q", n.Kind)
	case n.Amount < 0:
		return fmt.Errorf("amount %d is negative", n.Amount)
	case n.Kind == chargeonce.MoveVoid && n.Amount != 0:
		return fmt.Errorf("a void releases the whole hold, so its amount is 0, not %d", n.Amount)
	case !n.Origin.Valid():
		return fmt.Errorf("unknown origin %q", n.Origin)
	case !chargeonce.ValidKey(n.Key):
		return fmt.Errorf("key %q is not a lower-case UUID", n.Key)
	case !chargeonce.ValidReferencePrefix(n.ReferencePrefix):
		return fmt.Errorf("reference prefix %q must be a lower-case letter followed by lower-case letters, digits or underscores", n.ReferencePrefix)
	case (n.RequestKey == "") != (n.RequestFingerprint == ""):
		return errors.New("the request key and the request fingerprint come together or not at all")
	case n.Origin == chargeonce.MoveByDeadline && n.RequestKey != "":
		return errors.New("a move of the deadline has no API request, so no request key")
	case len(n.RequestKey) > MaxRequestKeyLength:
		return fmt.Errorf("the request key has %d bytes; at most %d are allowed", len(n.RequestKey), MaxRequestKeyLength)
	case n.RequestFingerprint != "" && !validHexSHA256(n.RequestFingerprint):
		return fmt.Errorf("request fingerprint %q is not a lower-case hex SHA-256", n.RequestFingerprint)
	case n.Now.IsZero():
		return errors.New("creation time is missing")
	}
	if err := chargeonce.ValidateText(n.RequestKey); err != nil {
		return fmt.Errorf("the request key %w", err)
	}
	return nil
}

func (s *db) StartMove(ctx context.Context, n NewMove) (Move, MoveDecision, error) {
	if err := n.validate(); err != nil {
		return Move{}, "", fmt.Errorf("store: new %s: %w", cmp.Or(string(n.Kind), "move"), err)
	}
	var (
		m Move
		d MoveDecision
	)
	err := s.txs.inTx(ctx, true, func(q querier) error {
		var err error
		m, d, err = s.startMove(ctx, q, n)
		return err
	})
	if err != nil {
		return Move{}, "", fmt.Errorf("store: %s of order %d: %w", n.Kind, n.OrderID, err)
	}
	return m, d, nil
}

func (s *db) startMove(ctx context.Context, q querier, n NewMove) (Move, MoveDecision, error) {
	// The lock comes first, so that a request that waited for it sees the
	// move its twin committed meanwhile, and is replayed rather than
	// refused as a second move of the hold.
	_, orderErr := queryOne(ctx, q, scanOrder, `SELECT `+orderColumns+` FROM orders WHERE id = $1`+s.d.lockOrder, n.OrderID)
	if orderErr != nil && !errors.Is(orderErr, ErrNotFound) {
		return Move{}, "", orderErr
	}
	for range getOrStartPasses {
		// The key decides before the order and its hold do.
		if prior, d, found, err := s.moveRequestKeyDecision(ctx, q, n); found || err != nil {
			return prior, d, err
		}
		if orderErr != nil {
			return Move{}, "", orderErr
		}
		h, err := queryOne(ctx, q, scanHold, `SELECT `+holdColumns+holdsJoin+` WHERE h.order_id = $1`, n.OrderID)
		if errors.Is(err, ErrNotFound) {
			return Move{}, "", fmt.Errorf("%w: the order was never authorized", ErrNotHeld)
		}
		if err != nil {
			return Move{}, "", err
		}
		if h.Status != chargeonce.HoldAuthorized {
			return Move{}, "", fmt.Errorf("%w: its hold %s was %s", ErrNotHeld, h.ChargeID, h.Status)
		}
		holding, err := queryOne(ctx, q, scanMove,
			`SELECT `+moveColumns+` FROM hold_moves WHERE attempt_key = $1 AND status IN ('pending', 'succeeded')`, h.AttemptKey)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return Move{}, "", err
		case holding.Status == chargeonce.MoveSucceeded:
			// Its hold ends with it, if it has not already.
			return Move{}, "", fmt.Errorf("%w: %s %s of its hold succeeded", ErrNotHeld, holding.Kind, holding.Key)
		default:
			return Move{}, "", fmt.Errorf("%w: %s %s", ErrHoldMoving, holding.Kind, holding.Key)
		}
		amount := h.Amount
		if n.Kind == chargeonce.MoveCapture {
			var ok bool
			if amount, ok = chargeonce.CaptureAmount(h.Amount, n.Amount); !ok {
				return Move{}, "", fmt.Errorf("%w: a capture of %d minor units of a hold of %s", ErrCaptureExceedsHold, n.Amount, h.Amount)
			}
		}
		inserted, err := q.exec(ctx,
			`INSERT INTO hold_moves (idempotency_key, kind, order_id, attempt_key, charge_id, amount_minor, currency, origin,
				provider, merchant_reference, status, request_key, request_fingerprint, workflow_started, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11, $12, false, $13)
			ON CONFLICT (request_key) WHERE status <> 'not_processed' DO NOTHING`,
			n.Key, string(n.Kind), n.OrderID, h.AttemptKey, h.ChargeID, amount.Minor, amount.Currency, string(n.Origin),
			h.Provider, chargeonce.MoveReference(n.ReferencePrefix, n.Kind, n.Key),
			nullIfEmpty(n.RequestKey), nullIfEmpty(n.RequestFingerprint), s.t(n.Now))
		if s.d.uniqueViolation(err) {
			return Move{}, "", fmt.Errorf("%w: key %s or its merchant reference already belongs to another move", ErrConflict, n.Key)
		}
		if err != nil {
			return Move{}, "", err
		}
		if inserted == 1 {
			m, err := queryOne(ctx, q, scanMove, `SELECT `+moveColumns+` FROM hold_moves WHERE idempotency_key = $1`, n.Key)
			return m, MoveCreated, err
		}
		// A move with the request key, for another order, was committed
		// meanwhile: read it again and decide on it.
	}
	return Move{}, "", fmt.Errorf("moves with request key %q kept appearing and settling; gave up after %d reads", n.RequestKey, getOrStartPasses)
}

// moveRequestKeyDecision finds the live move that n's request key asked
// for before, if any, and decides on it: replayed when its fingerprint is
// n's, key_reused otherwise.
func (s *db) moveRequestKeyDecision(ctx context.Context, q querier, n NewMove) (Move, MoveDecision, bool, error) {
	prior, found, err := priorRequest(ctx, q, moveIntents, moveColumns, scanMove, n.RequestKey)
	switch {
	case !found || err != nil:
		return Move{}, "", false, err
	case prior.RequestFingerprint == n.RequestFingerprint:
		return prior, MoveReplayed, true, nil
	default:
		return prior, MoveKeyReused, true, nil
	}
}

func (s *db) GetMove(ctx context.Context, key string) (Move, error) {
	var m Move
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		if m, err = queryOne(ctx, q, scanMove, `SELECT `+moveColumns+` FROM hold_moves WHERE idempotency_key = $1`, key); err != nil {
			return err
		}
		logs, err := loadRequests(ctx, q, moveIntents, `idempotency_key`, key)
		m.Requests = logs[key]
		return err
	})
	if err != nil {
		return Move{}, fmt.Errorf("store: move %s: %w", key, err)
	}
	return m, nil
}

func (s *db) OrderMoves(ctx context.Context, orderID int64) ([]Move, error) {
	moves, err := ofOrder(ctx, s, "hold_moves", moveColumns, scanMove, orderID)
	if err != nil {
		return nil, fmt.Errorf("store: moves of order %d: %w", orderID, err)
	}
	return moves, nil
}

func (s *db) MarkMoveWorkflowStarted(ctx context.Context, key string) error {
	return s.markWorkflowStarted(ctx, moveIntents, key)
}

func (s *db) UnstartedMoves(ctx context.Context, createdBefore time.Time, limit int) ([]Move, error) {
	return unstarted(ctx, s, moveIntents, moveColumns, scanMove, createdBefore, limit)
}

func (s *db) MarkMoveChecked(ctx context.Context, key string, at time.Time) error {
	return s.markChecked(ctx, moveIntents, key, at)
}

// validateEnd checks that a hold may end with status, captured minor units
// taken: ended, and a capture takes something while nothing else does.
func validateEnd(status chargeonce.HoldStatus, captured int64) error {
	switch {
	case !status.Ended():
		return fmt.Errorf("status %q does not end a hold", status)
	case status == chargeonce.HoldCaptured && captured <= 0:
		return fmt.Errorf("a captured hold took %d minor units; a capture takes something", captured)
	case status != chargeonce.HoldCaptured && captured != 0:
		return fmt.Errorf("a hold that was %s took nothing, not %d minor units", status, captured)
	}
	return nil
}

func (s *db) SettleMove(ctx context.Context, key string, status chargeonce.MoveStatus, declineCode string, ended chargeonce.HoldStatus, captured int64, at time.Time) (bool, error) {
	switch {
	case !chargeonce.ValidKey(key):
		return false, fmt.Errorf("store: settle move: key %q is not a lower-case UUID", key)
	case !status.Settled():
		return false, fmt.Errorf("store: settle move %s: status %q is not a settled one", key, status)
	case declineCode != "" && status != chargeonce.MoveDeclined:
		return false, fmt.Errorf("store: settle move %s: only a declined move has a decline code", key)
	case at.IsZero():
		return false, fmt.Errorf("store: settle move %s: the time is missing", key)
	}
	if ended != "" {
		if err := validateEnd(ended, captured); err != nil {
			return false, fmt.Errorf("store: settle move %s: %w", key, err)
		}
	} else if captured != 0 {
		return false, fmt.Errorf("store: settle move %s: %d minor units captured by a move that ends no hold", key, captured)
	}
	if err := chargeonce.ValidateText(declineCode); err != nil {
		return false, fmt.Errorf("store: settle move %s: the decline code %w", key, err)
	}
	var changed bool
	err := s.txs.inTx(ctx, true, func(q querier) error {
		attemptKey, err := queryOne(ctx, q, scanString,
			`UPDATE hold_moves SET status = $2, decline_code = $3, settled_at = $4
			WHERE idempotency_key = $1 AND status = 'pending' RETURNING attempt_key`,
			key, string(status), declineCode, s.t(at))
		if errors.Is(err, ErrNotFound) {
			// Either settled already, which is an answer, or unknown.
			_, err = queryOne(ctx, q, scanInt64, `SELECT 1 FROM hold_moves WHERE idempotency_key = $1`, key)
			return err
		}
		if err != nil {
			return err
		}
		changed = true
		if ended == "" {
			return nil
		}
		_, err = s.endHold(ctx, q, attemptKey, ended, captured, at)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: settle move %s as %s: %w", key, status, err)
	}
	return changed, nil
}

func (s *db) EndHold(ctx context.Context, attemptKey string, status chargeonce.HoldStatus, captured int64, at time.Time) (bool, error) {
	switch err := validateEnd(status, captured); {
	case !chargeonce.ValidKey(attemptKey):
		return false, fmt.Errorf("store: end hold: key %q is not a lower-case UUID", attemptKey)
	case err != nil:
		return false, fmt.Errorf("store: end hold of attempt %s: %w", attemptKey, err)
	case at.IsZero():
		return false, fmt.Errorf("store: end hold of attempt %s: the time is missing", attemptKey)
	}
	var changed bool
	err := s.txs.inTx(ctx, true, func(q querier) error {
		var err error
		changed, err = s.endHold(ctx, q, attemptKey, status, captured, at)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: end hold of attempt %s as %s: %w", attemptKey, status, err)
	}
	return changed, nil
}

// endHold ends the attempt's hold, if still authorized, and moves its
// order with it; it reports false when the hold had ended already, and
// ErrNotFound when there is none.
func (s *db) endHold(ctx context.Context, q querier, attemptKey string, status chargeonce.HoldStatus, captured int64, at time.Time) (bool, error) {
	var ended newEvent
	_, err := queryOne(ctx, q, func(r rows) (struct{}, error) {
		return struct{}{}, r.Scan(&ended.orderID, &ended.providerID, &ended.amount.Minor, &ended.amount.Currency)
	}, `UPDATE holds SET status = $2, captured_minor = $3, ended_at = $4
		WHERE attempt_key = $1 AND status = 'authorized' RETURNING order_id, charge_id, amount_minor, currency`,
		attemptKey, string(status), captured, s.t(at))
	if errors.Is(err, ErrNotFound) {
		// Either ended already, which is an answer, or unknown.
		_, err = queryOne(ctx, q, scanInt64, `SELECT 1 FROM holds WHERE attempt_key = $1`, attemptKey)
		return false, err
	}
	if err != nil {
		return false, err
	}
	if _, err := s.moveOrder(ctx, q, ended.orderID, chargeonce.OrderEvent{Kind: chargeonce.OrderHoldEnded, Hold: status}, "", at); err != nil {
		return false, err
	}
	// A capture's event tells what it took; the others, what was held.
	if status == chargeonce.HoldCaptured {
		ended.amount.Minor = captured
	}
	ended.typ, ended.attemptKey, ended.status, ended.at = chargeonce.HoldEvent(status), attemptKey, string(status), at
	return true, s.appendEvent(ctx, q, ended)
}

// chargedAmount is what the charge that paid a paid order took, and
// whether that charge is a captured hold: the order's amount, or what the
// capture of its hold took, which may be less.
func chargedAmount(ctx context.Context, q querier, order Order) (chargeonce.Money, bool, error) {
	captured, err := queryOne(ctx, q, scanInt64,
		`SELECT captured_minor FROM holds WHERE order_id = $1 AND charge_id = $2 AND status = 'captured'`,
		order.ID, order.ProviderPaymentID)
	if errors.Is(err, ErrNotFound) {
		return order.Amount, false, nil
	}
	if err != nil {
		return chargeonce.Money{}, false, err
	}
	return chargeonce.Money{Minor: captured, Currency: order.Amount.Currency}, true, nil
}
