package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"chargeonce"
)

// EndpointGoneReason is the disabled reason of an endpoint that answered
// 410 Gone.
const EndpointGoneReason = "the endpoint answered 410 Gone"

// MaxDeliveriesLimit bounds a page of the delivery log, and a claim.
const MaxDeliveriesLimit = 1000

var endpointIDPattern = regexp.MustCompile(`^we_[0-9a-f]{32}$`)

// newEventID returns a fresh event id: evt_ and 32 random hex digits.
func newEventID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "evt_" + hex.EncodeToString(b)
}

// The columns of an endpoint (alias e), of an event (alias ev) and of a
// delivery (alias d), in the order their scanners read them.
const (
	endpointColumns = `e.id, e.url, e.event_types, e.description, e.secret, COALESCE(e.previous_secret, ''),
	e.previous_secret_expires_at, e.disabled_at, e.disabled_reason, e.created_at,
	(SELECT min(f.first_failed_at) FROM event_deliveries f WHERE f.endpoint_id = e.id AND f.status = 'pending')`
	// merchantEventColumns read the provider, and why, from the event's
	// attempt or refund, which never change them; subqueries rather than
	// joins keep the rows of ClaimDeliveries lockable.
	merchantEventColumns = `ev.id, ev.type, ev.order_id, ev.sequence, ev.order_status, ev.attempt_key, ev.refund_key,
	ev.amount_minor, ev.currency, ev.provider_id, ev.charge_id, ev.status, ev.failure_reason,
	COALESCE((SELECT pa.provider FROM payment_attempts pa WHERE pa.idempotency_key = ev.attempt_key),
		(SELECT rf.provider FROM refunds rf WHERE rf.idempotency_key = ev.refund_key), ''),
	COALESCE((SELECT pa.routed_by FROM payment_attempts pa WHERE pa.idempotency_key = ev.attempt_key), ''),
	ev.created_at`
	attemptLogColumns = `a.delivery_id, d.event_id, ev.type, a.endpoint_id, a.attempt, a.at, a.result, a.http_status, a.error,
	a.duration_us, a.next_attempt_at`
)

// encodeEventTypes stores a list of types each between commas, so that one
// LIKE finds a type in it (eventTypePattern); none means every type.
func encodeEventTypes(types []chargeonce.EventType) string {
	if len(types) == 0 {
		return ""
	}
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = string(t)
	}
	return "," + strings.Join(parts, ",") + ","
}

// eventTypePattern is the LIKE pattern, with \ as its escape, that finds t
// in a list of encodeEventTypes; the _ of not_processed is escaped so that
// it matches itself only.
func eventTypePattern(t chargeonce.EventType) string {
	return "%," + strings.ReplaceAll(string(t), "_", `\_`) + ",%"
}

// endpointRow holds the endpointColumns of one row, so that a row that
// holds more than an endpoint can scan it too.
type endpointRow struct {
	e                                     Endpoint
	types                                 string
	prevExpires, disabled, created, since timestamp
}

func (x *endpointRow) dest() []any {
	return []any{&x.e.ID, &x.e.URL, &x.types, &x.e.Description, &x.e.Secret, &x.e.PreviousSecret,
		&x.prevExpires, &x.disabled, &x.e.DisabledReason, &x.created, &x.since}
}

func (x *endpointRow) endpoint() (Endpoint, error) {
	e := x.e
	for t := range strings.SplitSeq(strings.Trim(x.types, ","), ",") {
		if t == "" {
			continue
		}
		et := chargeonce.EventType(t)
		if !et.Valid() {
			return Endpoint{}, errCorrupt("endpoint", e.ID, fmt.Errorf("unknown event type %q", t))
		}
		e.EventTypes = append(e.EventTypes, et)
	}
	var err error
	if e.CreatedAt, err = x.created.required("created_at"); err != nil {
		return Endpoint{}, errCorrupt("endpoint", e.ID, err)
	}
	e.PreviousSecretExpiresAt = x.prevExpires.ptr()
	e.DisabledAt = x.disabled.ptr()
	e.FailingSince = x.since.ptr()
	return e, nil
}

func scanEndpoint(r rows) (Endpoint, error) {
	var x endpointRow
	if err := r.Scan(x.dest()...); err != nil {
		return Endpoint{}, err
	}
	return x.endpoint()
}

// ptr returns the time of a NULLable column, nil for NULL.
func (ts timestamp) ptr() *time.Time {
	if !ts.valid {
		return nil
	}
	t := ts.t
	return &t
}

// eventRow holds the merchantEventColumns of one row.
type eventRow struct {
	ev                    MerchantEvent
	typ, orderStatus, cur string
	minor                 int64
	created               timestamp
}

func (x *eventRow) dest() []any {
	return []any{&x.ev.ID, &x.typ, &x.ev.OrderID, &x.ev.Sequence, &x.orderStatus, &x.ev.AttemptKey, &x.ev.RefundKey,
		&x.minor, &x.cur, &x.ev.ProviderID, &x.ev.ChargeID, &x.ev.Status, &x.ev.FailureReason, &x.ev.Provider, &x.ev.RoutedBy, &x.created}
}

func (x *eventRow) event() (MerchantEvent, error) {
	ev := x.ev
	var err error
	if ev.Type = chargeonce.EventType(x.typ); !ev.Type.Valid() {
		return MerchantEvent{}, errCorrupt("event", ev.ID, fmt.Errorf("unknown type %q", x.typ))
	}
	if ev.OrderStatus = chargeonce.OrderStatus(x.orderStatus); !ev.OrderStatus.Valid() {
		return MerchantEvent{}, errCorrupt("event", ev.ID, fmt.Errorf("unknown order status %q", x.orderStatus))
	}
	if ev.Amount, err = chargeonce.NewMoney(x.minor, x.cur); err != nil {
		return MerchantEvent{}, errCorrupt("event", ev.ID, err)
	}
	if ev.CreatedAt, err = x.created.required("created_at"); err != nil {
		return MerchantEvent{}, errCorrupt("event", ev.ID, err)
	}
	return ev, nil
}

func scanMerchantEvent(r rows) (MerchantEvent, error) {
	var x eventRow
	if err := r.Scan(x.dest()...); err != nil {
		return MerchantEvent{}, err
	}
	return x.event()
}

func scanDeliveryAttempt(r rows) (DeliveryAttempt, error) {
	var (
		a            DeliveryAttempt
		typ, result  string
		durationUS   int64
		at, nextTime timestamp
	)
	var failure string
	if err := r.Scan(&a.DeliveryID, &a.EventID, &typ, &a.EndpointID, &a.Attempt, &at, &result, &a.HTTPStatus, &failure,
		&durationUS, &nextTime); err != nil {
		return DeliveryAttempt{}, err
	}
	a.EventType, a.Result = chargeonce.EventType(typ), DeliveryResult(result)
	a.Failure = readFailure(a.Result, a.HTTPStatus, failure)
	a.Duration = time.Duration(durationUS) * time.Microsecond
	a.NextAttemptAt = nextTime.t
	var err error
	if a.At, err = at.required("at"); err != nil {
		return DeliveryAttempt{}, errCorrupt("try of delivery", a.DeliveryID, err)
	}
	return a, nil
}

// readFailure reads the class of a try's failure from its error column.
// Tries recorded before the log kept classes hold the transport's own
// error there, or nothing for an answer; they read as the class of their
// kind, so that the log never shows the old text. Reading them so, rather
// than rewriting them, keeps one rule of what the log shows, in Go, for
// both databases.
func readFailure(result DeliveryResult, status int, stored string) DeliveryFailure {
	switch {
	case result == DeliveryDelivered:
		return ""
	case status != 0:
		return FailureHTTPStatus
	case slices.Contains(DeliveryFailures(), DeliveryFailure(stored)):
		return DeliveryFailure(stored)
	default:
		return FailureConnection
	}
}

func (n NewEndpoint) validate() error {
	switch {
	case !endpointIDPattern.MatchString(n.ID):
		return fmt.Errorf("endpoint ID %q is not we_ and 32 lower-case hex digits", n.ID)
	case n.URL == "":
		return errors.New("the URL is empty")
	case !strings.HasPrefix(n.Secret, "whsec_"):
		return errors.New("the secret is not a whsec_ secret")
	case n.Now.IsZero():
		return errors.New("creation time is missing")
	}
	if err := chargeonce.ValidateText(n.URL); err != nil {
		return fmt.Errorf("the URL %w", err)
	}
	if err := chargeonce.ValidateDescription(n.Description); err != nil {
		return fmt.Errorf("the description %w", err)
	}
	seen := make(map[chargeonce.EventType]bool, len(n.EventTypes))
	for _, t := range n.EventTypes {
		if !t.Valid() {
			return fmt.Errorf("unknown event type %q", t)
		}
		if seen[t] {
			return fmt.Errorf("event type %s is listed twice", t)
		}
		seen[t] = true
	}
	return nil
}

func (s *db) CreateEndpoint(ctx context.Context, n NewEndpoint) (Endpoint, error) {
	if err := n.validate(); err != nil {
		return Endpoint{}, fmt.Errorf("store: new endpoint: %w", err)
	}
	var e Endpoint
	err := s.txs.inTx(ctx, true, func(q querier) error {
		_, err := q.exec(ctx, `INSERT INTO event_endpoints (id, url, event_types, description, secret, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			n.ID, n.URL, encodeEventTypes(n.EventTypes), n.Description, n.Secret, s.t(n.Now))
		if s.d.uniqueViolation(err) {
			return fmt.Errorf("%w: endpoint %s exists already", ErrConflict, n.ID)
		}
		if err != nil {
			return err
		}
		e, err = getEndpoint(ctx, q, n.ID)
		return err
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("store: create endpoint %s: %w", n.ID, err)
	}
	return e, nil
}

func getEndpoint(ctx context.Context, q querier, id string) (Endpoint, error) {
	return queryOne(ctx, q, scanEndpoint, `SELECT `+endpointColumns+` FROM event_endpoints e WHERE e.id = $1`, id)
}

func (s *db) Endpoints(ctx context.Context) ([]Endpoint, error) {
	var all []Endpoint
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		all, err = queryAll(ctx, q, scanEndpoint, `SELECT `+endpointColumns+` FROM event_endpoints e ORDER BY e.created_at, e.id`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: endpoints: %w", err)
	}
	return all, nil
}

func (s *db) GetEndpoint(ctx context.Context, id string) (Endpoint, error) {
	var e Endpoint
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		e, err = getEndpoint(ctx, q, id)
		return err
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("store: endpoint %s: %w", id, err)
	}
	return e, nil
}

// updateEndpoint runs an UPDATE of the endpoint $1 and returns it as it
// is then; ErrNotFound when there is no such endpoint.
func (s *db) updateEndpoint(ctx context.Context, id, what, update string, args ...any) (Endpoint, error) {
	var e Endpoint
	err := s.txs.inTx(ctx, true, func(q querier) error {
		if _, err := q.exec(ctx, update, append([]any{id}, args...)...); err != nil {
			return err
		}
		var err error
		e, err = getEndpoint(ctx, q, id)
		return err
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("store: %s endpoint %s: %w", what, id, err)
	}
	return e, nil
}

func (s *db) SetEndpointDisabled(ctx context.Context, id string, disabled bool, reason string, at time.Time) (Endpoint, error) {
	if !disabled {
		return s.updateEndpoint(ctx, id, "enable", `UPDATE event_endpoints SET disabled_at = NULL, disabled_reason = '' WHERE id = $1`)
	}
	switch err := chargeonce.ValidateText(reason); {
	case reason == "":
		return Endpoint{}, fmt.Errorf("store: disable endpoint %s: the reason is missing", id)
	case err != nil:
		return Endpoint{}, fmt.Errorf("store: disable endpoint %s: the reason %w", id, err)
	case at.IsZero():
		return Endpoint{}, fmt.Errorf("store: disable endpoint %s: the time is missing", id)
	}
	// A disabled endpoint keeps the time and reason it was first disabled.
	return s.updateEndpoint(ctx, id, "disable",
		`UPDATE event_endpoints SET disabled_at = $2, disabled_reason = $3 WHERE id = $1 AND disabled_at IS NULL`, s.t(at), reason)
}

func (s *db) RotateEndpointSecret(ctx context.Context, id, secret string, previousUntil, now time.Time) (Endpoint, error) {
	if !strings.HasPrefix(secret, "whsec_") {
		return Endpoint{}, fmt.Errorf("store: rotate the secret of endpoint %s: the new secret is not a whsec_ secret", id)
	}
	if previousUntil.After(now) {
		return s.updateEndpoint(ctx, id, "rotate the secret of",
			`UPDATE event_endpoints SET previous_secret = secret, previous_secret_expires_at = $3, secret = $2 WHERE id = $1`,
			secret, s.t(previousUntil))
	}
	return s.updateEndpoint(ctx, id, "rotate the secret of",
		`UPDATE event_endpoints SET previous_secret = NULL, previous_secret_expires_at = NULL, secret = $2 WHERE id = $1`, secret)
}

func (s *db) OrderEvents(ctx context.Context, orderID int64) ([]MerchantEvent, error) {
	var events []MerchantEvent
	err := s.txs.inTx(ctx, false, func(q querier) error {
		if _, err := queryOne(ctx, q, scanInt64, `SELECT 1 FROM orders WHERE id = $1`, orderID); err != nil {
			return err
		}
		var err error
		events, err = queryAll(ctx, q, scanMerchantEvent,
			`SELECT `+merchantEventColumns+` FROM merchant_events ev WHERE ev.order_id = $1 ORDER BY ev.sequence`, orderID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: events of order %d: %w", orderID, err)
	}
	return events, nil
}

func (s *db) GetEvent(ctx context.Context, id string) (MerchantEvent, error) {
	var ev MerchantEvent
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		ev, err = queryOne(ctx, q, scanMerchantEvent, `SELECT `+merchantEventColumns+` FROM merchant_events ev WHERE ev.id = $1`, id)
		return err
	})
	if err != nil {
		return MerchantEvent{}, fmt.Errorf("store: event %s: %w", id, err)
	}
	return ev, nil
}

// newEvent is an event that a change writes in its transaction.
type newEvent struct {
	typ                   chargeonce.EventType
	orderID               int64
	attemptKey, refundKey string
	amount                chargeonce.Money
	providerID, chargeID  string
	status, failure       string
	at                    time.Time
}

// numbered is an event's number in its order, and the order's status
// once the change is made: what bumping orders.event_sequence returns.
type numbered struct {
	sequence int64
	status   string
}

func scanNumbered(r rows) (numbered, error) {
	var n numbered
	return n, r.Scan(&n.sequence, &n.status)
}

// appendEvent numbers e next in its order's sequence, then writes it
// (insertEvent). It runs last in the transaction of the change, so that
// the order's status it reads is the one the change leaves. Bumping the
// order's event_sequence takes the order's row lock until the commit, so
// that numbers have no gaps. A change that updates the order anyway bumps
// it in that statement and calls insertEvent itself, one statement fewer.
func (s *db) appendEvent(ctx context.Context, q querier, e newEvent) error {
	n, err := queryOne(ctx, q, scanNumbered,
		`UPDATE orders SET event_sequence = event_sequence + 1 WHERE id = $1 RETURNING event_sequence, status`, e.orderID)
	if err != nil {
		return fmt.Errorf("number the %s event: %w", e.typ, err)
	}
	return s.insertEvent(ctx, q, e, n)
}

// insertEvent writes e with its number and queues it for every enabled
// endpoint that wants its type.
func (s *db) insertEvent(ctx context.Context, q querier, e newEvent, n numbered) error {
	id, at := newEventID(), s.t(e.at)
	if _, err := q.exec(ctx,
		`INSERT INTO merchant_events (id, order_id, sequence, type, attempt_key, refund_key, amount_minor, currency,
			order_status, provider_id, charge_id, status, failure_reason, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		id, e.orderID, n.sequence, string(e.typ), e.attemptKey, e.refundKey, e.amount.Minor, e.amount.Currency,
		n.status, e.providerID, e.chargeID, e.status, e.failure, at); err != nil {
		return fmt.Errorf("write the %s event: %w", e.typ, err)
	}
	if _, err := q.exec(ctx,
		`INSERT INTO event_deliveries (event_id, endpoint_id, status, next_attempt_at, created_at)
		SELECT $1, id, 'pending', $2, $2 FROM event_endpoints
		WHERE disabled_at IS NULL AND (event_types = '' OR event_types LIKE $3 ESCAPE '\')`,
		id, at, eventTypePattern(e.typ)); err != nil {
		return fmt.Errorf("queue the %s event: %w", e.typ, err)
	}
	return nil
}

// paymentEventType is the event of an attempt that settled as status;
// false for failed, which needs a human's review and tells the merchant
// nothing yet.
func paymentEventType(status chargeonce.AttemptStatus) (chargeonce.EventType, bool) {
	switch status {
	case chargeonce.AttemptSucceeded:
		return chargeonce.EventPaymentSucceeded, true
	case chargeonce.AttemptDeclined:
		return chargeonce.EventPaymentDeclined, true
	case chargeonce.AttemptAbandoned:
		return chargeonce.EventPaymentAbandoned, true
	case chargeonce.AttemptNotProcessed:
		return chargeonce.EventPaymentNotProcessed, true
	}
	return "", false
}

// refundEventType is the event of a refund that settled as status.
func refundEventType(status chargeonce.RefundStatus) chargeonce.EventType {
	switch status {
	case chargeonce.RefundSucceeded:
		return chargeonce.EventRefundSucceeded
	case chargeonce.RefundFailed:
		return chargeonce.EventRefundFailed
	default:
		return chargeonce.EventRefundNotProcessed
	}
}

func (s *db) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]DueDelivery, error) {
	switch {
	case limit <= 0 || limit > MaxDeliveriesLimit:
		return nil, fmt.Errorf("store: claim deliveries: limit %d is not between 1 and %d", limit, MaxDeliveriesLimit)
	case lease <= 0:
		return nil, fmt.Errorf("store: claim deliveries: lease %v is not positive", lease)
	case now.IsZero():
		return nil, errors.New("store: claim deliveries: the time is missing")
	}
	var due []DueDelivery
	err := s.txs.inTx(ctx, true, func(q querier) error {
		var err error
		due, err = queryAll(ctx, q, func(r rows) (DueDelivery, error) {
			var (
				d           DueDelivery
				attempts    int
				firstFailed timestamp
				ev          eventRow
				ep          endpointRow
			)
			dest := append([]any{&d.ID, &attempts, &d.FailedInRound, &firstFailed}, ev.dest()...)
			if err := r.Scan(append(dest, ep.dest()...)...); err != nil {
				return DueDelivery{}, err
			}
			var err error
			if d.Event, err = ev.event(); err != nil {
				return DueDelivery{}, err
			}
			if d.Endpoint, err = ep.endpoint(); err != nil {
				return DueDelivery{}, err
			}
			d.Attempt, d.FirstFailedAt = attempts+1, firstFailed.ptr()
			return d, nil
		}, `SELECT d.id, d.attempts, d.failed_in_round, d.first_failed_at, `+merchantEventColumns+`, `+endpointColumns+`
			FROM event_deliveries d
			JOIN merchant_events ev ON ev.id = d.event_id
			JOIN event_endpoints e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
				AND e.disabled_at IS NULL
			ORDER BY d.next_attempt_at, d.id LIMIT $2`+s.d.skipLocked, s.t(now), limit)
		if err != nil || len(due) == 0 {
			return err
		}
		ids := make([]string, len(due))
		args := []any{s.t(now.Add(lease))}
		for i, d := range due {
			ids[i] = fmt.Sprintf("$%d", i+2)
			args = append(args, d.ID)
		}
		_, err = q.exec(ctx, `UPDATE event_deliveries SET lease_until = $1 WHERE id IN (`+strings.Join(ids, ", ")+`)`, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim deliveries: %w", err)
	}
	return due, nil
}

func (a DeliveryAttempt) validate() error {
	switch {
	case a.DeliveryID <= 0:
		return fmt.Errorf("delivery ID %d is not positive", a.DeliveryID)
	case a.Attempt <= 0:
		return fmt.Errorf("attempt %d is not positive", a.Attempt)
	case a.At.IsZero():
		return errors.New("the time of the try is missing")
	case a.HTTPStatus != 0 && (a.HTTPStatus < 100 || a.HTTPStatus > 599):
		return fmt.Errorf("status code %d is neither 0 (no answer) nor an HTTP status", a.HTTPStatus)
	case a.Failure != "" && !slices.Contains(DeliveryFailures(), a.Failure):
		return fmt.Errorf("%q is not a class of failure", a.Failure)
	case a.Result == DeliveryDelivered && a.Failure != "":
		return fmt.Errorf("a delivered try has no failure, not %s", a.Failure)
	case a.Result != DeliveryDelivered && a.HTTPStatus != 0 && a.Failure != FailureHTTPStatus:
		return fmt.Errorf("a try answered %d that was not delivered failed with %s, not %q", a.HTTPStatus, FailureHTTPStatus, a.Failure)
	case a.HTTPStatus == 0 && (a.Failure == "" || a.Failure == FailureHTTPStatus):
		return fmt.Errorf("a try with no answer needs the class of its failure, not %q", a.Failure)
	case a.Duration < 0:
		return fmt.Errorf("duration %v is negative", a.Duration)
	case a.Result == DeliveryGone && a.HTTPStatus != 410:
		return fmt.Errorf("a try is gone on a 410 only, not on %d", a.HTTPStatus)
	case a.Result == DeliveryFailed && a.NextAttemptAt.IsZero():
		return errors.New("a failed try needs the time of the next one")
	case a.Result != DeliveryFailed && !a.NextAttemptAt.IsZero():
		return fmt.Errorf("a try that is %s has no next one", a.Result)
	}
	return nil
}

func (s *db) RecordDeliveryAttempt(ctx context.Context, a DeliveryAttempt) error {
	if err := a.validate(); err != nil {
		return fmt.Errorf("store: record a try: %w", err)
	}
	at := s.t(a.At)
	// Each result moves the delivery on; the attempts condition makes a
	// second record of one try, by a dispatcher whose lease ran out, fail
	// instead of counting twice.
	var set string
	args := []any{a.DeliveryID, a.Attempt}
	switch a.Result {
	case DeliveryDelivered:
		set = `status = 'delivered', delivered_at = $3`
		args = append(args, at)
	case DeliveryFailed:
		set = `next_attempt_at = $4, failed_in_round = failed_in_round + 1, first_failed_at = COALESCE(first_failed_at, $3)`
		args = append(args, at, s.t(a.NextAttemptAt))
	case DeliveryGone:
		set = `status = 'gone'`
	case DeliveryGivenUp:
		set = `status = 'given_up', failed_in_round = failed_in_round + 1, first_failed_at = COALESCE(first_failed_at, $3)`
		args = append(args, at)
	default:
		return fmt.Errorf("store: record a try: unknown result %q", a.Result)
	}
	var next any
	if a.Result == DeliveryFailed {
		next = s.t(a.NextAttemptAt)
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		endpointID, err := queryOne(ctx, q, func(r rows) (string, error) {
			var id string
			return id, r.Scan(&id)
		}, `UPDATE event_deliveries SET attempts = $2, lease_until = NULL, `+set+`
			WHERE id = $1 AND attempts = $2 - 1 AND status = 'pending' RETURNING endpoint_id`, args...)
		if errors.Is(err, ErrNotFound) {
			if _, err := queryOne(ctx, q, scanInt64, `SELECT 1 FROM event_deliveries WHERE id = $1`, a.DeliveryID); err != nil {
				return err
			}
			return fmt.Errorf("%w: try %d was recorded already, or the delivery is no longer pending", ErrConflict, a.Attempt)
		}
		if err != nil {
			return err
		}
		if _, err := q.exec(ctx,
			`INSERT INTO event_delivery_attempts (delivery_id, endpoint_id, attempt, at, result, http_status, error, duration_us, next_attempt_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			a.DeliveryID, endpointID, a.Attempt, at, string(a.Result), a.HTTPStatus, string(a.Failure), a.Duration.Microseconds(), next); err != nil {
			return err
		}
		if a.Result != DeliveryGone {
			return nil
		}
		_, err = q.exec(ctx, `UPDATE event_endpoints SET disabled_at = $2, disabled_reason = $3 WHERE id = $1 AND disabled_at IS NULL`,
			endpointID, at, EndpointGoneReason)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: record try %d of delivery %d: %w", a.Attempt, a.DeliveryID, err)
	}
	return nil
}

func (s *db) Deliveries(ctx context.Context, endpointID string, limit int) ([]DeliveryAttempt, error) {
	if limit <= 0 || limit > MaxDeliveriesLimit {
		return nil, fmt.Errorf("store: deliveries of endpoint %s: limit %d is not between 1 and %d", endpointID, limit, MaxDeliveriesLimit)
	}
	var log []DeliveryAttempt
	err := s.txs.inTx(ctx, false, func(q querier) error {
		if _, err := queryOne(ctx, q, scanInt64, `SELECT 1 FROM event_endpoints WHERE id = $1`, endpointID); err != nil {
			return err
		}
		var err error
		log, err = queryAll(ctx, q, scanDeliveryAttempt, `SELECT `+attemptLogColumns+` FROM event_delivery_attempts a
			JOIN event_deliveries d ON d.id = a.delivery_id
			JOIN merchant_events ev ON ev.id = d.event_id
			WHERE a.endpoint_id = $1 ORDER BY a.at DESC, a.id DESC LIMIT $2`, endpointID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: deliveries of endpoint %s: %w", endpointID, err)
	}
	return log, nil
}

func (s *db) ReplayEvent(ctx context.Context, eventID, endpointID string, now time.Time) error {
	if now.IsZero() {
		return fmt.Errorf("store: replay event %s: the time is missing", eventID)
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		if _, err := queryOne(ctx, q, scanInt64, `SELECT 1 FROM merchant_events WHERE id = $1`, eventID); err != nil {
			return fmt.Errorf("event: %w", err)
		}
		e, err := getEndpoint(ctx, q, endpointID)
		if err != nil {
			return fmt.Errorf("endpoint: %w", err)
		}
		if e.DisabledAt != nil {
			return ErrEndpointDisabled
		}
		// A new round: the schedule starts again, and so does the time it
		// has been failing; the attempts keep counting.
		_, err = q.exec(ctx, `INSERT INTO event_deliveries (event_id, endpoint_id, status, next_attempt_at, created_at)
			VALUES ($1, $2, 'pending', $3, $3)
			ON CONFLICT (event_id, endpoint_id) DO UPDATE SET status = 'pending', next_attempt_at = $3, failed_in_round = 0,
				first_failed_at = NULL, delivered_at = NULL`, eventID, endpointID, s.t(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: replay event %s at endpoint %s: %w", eventID, endpointID, err)
	}
	return nil
}

func (s *db) DeliveryStats(ctx context.Context) (DeliveryStats, error) {
	st := DeliveryStats{FailingSince: make(map[string]time.Time)}
	err := s.txs.inTx(ctx, false, func(q querier) error {
		// Deliveries to a disabled endpoint wait for no dispatcher, so
		// they are not pending; given up ones are counted when they give up.
		type pending struct {
			n      int64
			oldest timestamp
		}
		p, err := queryOne(ctx, q, func(r rows) (pending, error) {
			var p pending
			return p, r.Scan(&p.n, &p.oldest)
		}, `SELECT count(*), min(d.created_at) FROM event_deliveries d JOIN event_endpoints e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND e.disabled_at IS NULL`)
		if err != nil {
			return err
		}
		st.Pending, st.OldestPendingAt = int(p.n), p.oldest.t
		type failing struct {
			endpoint string
			since    timestamp
		}
		fs, err := queryAll(ctx, q, func(r rows) (failing, error) {
			var f failing
			return f, r.Scan(&f.endpoint, &f.since)
		}, `SELECT d.endpoint_id, min(d.first_failed_at) FROM event_deliveries d JOIN event_endpoints e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND d.first_failed_at IS NOT NULL AND e.disabled_at IS NULL
			GROUP BY d.endpoint_id`)
		for _, f := range fs {
			st.FailingSince[f.endpoint] = f.since.t
		}
		return err
	})
	if err != nil {
		return DeliveryStats{}, fmt.Errorf("store: delivery stats: %w", err)
	}
	return st, nil
}
