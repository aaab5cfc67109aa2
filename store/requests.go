package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"chargeonce"
)

// RequestLog is the request log of one operation's intents: every request
// sent to the provider under an intent's key, in the order they were sent.
// A request is listed before it goes out and its end is written after, so
// that a request whose sender stopped while it was in flight stays listed,
// unanswered: the proof that a request under the key may have been
// processed although no answer to it was ever seen.
type RequestLog interface {
	// Begin lists a request under key, about to be sent at at, as
	// chargeonce.RequestUnanswered. It fails with ErrNotFound when no
	// intent has the key.
	Begin(ctx context.Context, key string, at time.Time) (LoggedRequest, error)
	// End writes how the request listed as lr ended. r.Key and r.At must
	// be lr's; At and Duration are kept to the microsecond.
	End(ctx context.Context, lr LoggedRequest, r chargeonce.ProviderRequest) error
	// Withdraw takes back the listing of a request that never went out,
	// such as one that an open breaker held back: the log lists what was
	// sent.
	Withdraw(ctx context.Context, lr LoggedRequest) error
	// Unanswered counts the requests under lr's key, other than lr, that
	// went out and have no end written: requests in flight, or lost with
	// the sender that stopped while they were.
	Unanswered(ctx context.Context, lr LoggedRequest) (int, error)
}

// LoggedRequest is a request listed in a request log.
type LoggedRequest struct {
	// Key is the idempotency key the request carries.
	Key string
	// At is when the request was sent, to the microsecond.
	At time.Time
	// N is the request's number in the log when it was listed, from 1: its
	// place among the key's requests by the time each was sent, which the
	// API's timeline (and the starter) shows it under.
	N int
	// id is the row of the request.
	id int64
}

// requestLog is the RequestLog of the intents in the tables of it.
type requestLog struct {
	s  *db
	it intentTables
}

// Requests returns the request log of op's intents.
func (s *db) Requests(op chargeonce.Operation) (RequestLog, error) {
	switch op {
	case chargeonce.OperationCharge:
		return requestLog{s, attemptIntents}, nil
	case chargeonce.OperationRefund:
		return requestLog{s, refundIntents}, nil
	case chargeonce.OperationCapture, chargeonce.OperationVoid:
		// One log for both: a move's key is a capture's or a void's.
		return requestLog{s, moveIntents}, nil
	}
	return nil, fmt.Errorf("store: no request log for operation %q", op)
}

func (l requestLog) Begin(ctx context.Context, key string, at time.Time) (LoggedRequest, error) {
	switch {
	case !chargeonce.ValidKey(key):
		return LoggedRequest{}, fmt.Errorf("store: list provider request: key %q is not a lower-case UUID", key)
	case at.IsZero():
		return LoggedRequest{}, errors.New("store: list provider request: the time of the request is missing")
	}
	lr := LoggedRequest{Key: key, At: storedTime(at)}
	err := l.s.txs.inTx(ctx, true, func(q querier) error {
		if _, err := queryOne(ctx, q, scanInt64, `SELECT 1 FROM `+l.it.table+` WHERE idempotency_key = $1`, key); err != nil {
			return err
		}
		var err error
		lr.id, err = queryOne(ctx, q, scanInt64,
			`INSERT INTO `+l.it.requests+` (idempotency_key, at, status_code, outcome, replayed, duration_us)
			VALUES ($1, $2, 0, $3, false, 0) RETURNING id`,
			key, l.s.t(at), chargeonce.RequestUnanswered)
		if err != nil {
			return err
		}
		n, err := queryOne(ctx, q, scanInt64, `SELECT count(*) FROM `+l.it.requests+` WHERE idempotency_key = $1 AND at <= $2`, key, l.s.t(at))
		lr.N = int(n)
		return err
	})
	if err != nil {
		return LoggedRequest{}, fmt.Errorf("store: list provider request of %s %s: %w", l.it.what, key, err)
	}
	return lr, nil
}

func (l requestLog) End(ctx context.Context, lr LoggedRequest, r chargeonce.ProviderRequest) error {
	if err := validateRequest(r); err != nil {
		return fmt.Errorf("store: end provider request: %w", err)
	}
	if r.Key != lr.Key || !storedTime(r.At).Equal(lr.At) {
		return fmt.Errorf("store: end provider request: the request of %s at %s is not the one listed, of %s at %s", r.Key, r.At, lr.Key, lr.At)
	}
	return l.write(ctx, "end", lr,
		`UPDATE `+l.it.requests+` SET status_code = $2, outcome = $3, replayed = $4, duration_us = $5 WHERE id = $1`,
		r.StatusCode, r.Outcome, r.Replayed, r.Duration.Microseconds())
}

func (l requestLog) Withdraw(ctx context.Context, lr LoggedRequest) error {
	return l.write(ctx, "withdraw", lr, `DELETE FROM `+l.it.requests+` WHERE id = $1`)
}

// write runs stmt, which changes the row of lr, $1, with args after it, and
// reports ErrNotFound when there is no such row; what names it in errors.
func (l requestLog) write(ctx context.Context, what string, lr LoggedRequest, stmt string, args ...any) error {
	err := l.s.txs.inTx(ctx, true, func(q querier) error {
		n, err := q.exec(ctx, stmt, append([]any{lr.id}, args...)...)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store: %s provider request %d of %s %s: %w", what, lr.N, l.it.what, lr.Key, err)
	}
	return nil
}

func (l requestLog) Unanswered(ctx context.Context, lr LoggedRequest) (int, error) {
	var n int64
	err := l.s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		n, err = queryOne(ctx, q, scanInt64,
			`SELECT count(*) FROM `+l.it.requests+` WHERE idempotency_key = $1 AND id <> $2 AND outcome = $3`,
			lr.Key, lr.id, chargeonce.RequestUnanswered)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: unanswered provider requests of %s %s: %w", l.it.what, lr.Key, err)
	}
	return int(n), nil
}
