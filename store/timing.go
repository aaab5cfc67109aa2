package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"chargeonce"
)

// selectTiming reads the one row of payment_timing.
const selectTiming = `SELECT timing, published_at FROM payment_timing WHERE id = 1`

func (s *db) PublishTiming(ctx context.Context, timing []byte, replace bool) (PublishedTiming, error) {
	if !utf8.Valid(timing) || !json.Valid(timing) {
		return PublishedTiming{}, errors.New("store: publish the payment timing: the timing is not JSON text")
	}
	onConflict := `DO NOTHING`
	if replace {
		onConflict = `DO UPDATE SET timing = excluded.timing, published_at = excluded.published_at`
	}
	var p PublishedTiming
	err := s.txs.inTx(ctx, true, func(q querier) error {
		// A concurrent first publication waits on the primary key until the
		// other commits, then does nothing (or replaces it); the SELECT that
		// follows sees what is stored then.
		if _, err := q.exec(ctx, `INSERT INTO payment_timing (id, timing, published_at) VALUES (1, $1, $2) ON CONFLICT (id) `+onConflict,
			string(timing), s.t(time.Now())); err != nil {
			return err
		}
		var err error
		p, err = queryOne(ctx, q, scanPublishedTiming, selectTiming)
		return err
	})
	if err != nil {
		return PublishedTiming{}, fmt.Errorf("store: publish the payment timing: %w", err)
	}
	return p, nil
}

func (s *db) PaymentTiming(ctx context.Context) (PublishedTiming, error) {
	var p PublishedTiming
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		p, err = queryOne(ctx, q, scanPublishedTiming, selectTiming)
		return err
	})
	if err != nil {
		return PublishedTiming{}, fmt.Errorf("store: payment timing: %w", err)
	}
	return p, nil
}

func scanPublishedTiming(r rows) (PublishedTiming, error) {
	var (
		timing    string
		published timestamp
	)
	if err := r.Scan(&timing, &published); err != nil {
		return PublishedTiming{}, err
	}
	at, err := published.required("published_at")
	if err != nil {
		return PublishedTiming{}, errCorrupt("payment timing", 1, err)
	}
	return PublishedTiming{Timing: []byte(timing), PublishedAt: at}, nil
}

func (s *db) PublishProviders(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return errors.New("store: publish the workers' providers: no provider")
	}
	for _, name := range names {
		if err := chargeonce.CheckProviderName(name); err != nil {
			return fmt.Errorf("store: publish the workers' providers: %w", err)
		}
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		if _, err := q.exec(ctx, `DELETE FROM worker_providers`); err != nil {
			return err
		}
		now := s.t(time.Now())
		for _, name := range names {
			if _, err := q.exec(ctx, `INSERT INTO worker_providers (name, published_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: publish the workers' providers: %w", err)
	}
	return nil
}

func (s *db) WorkerProviders(ctx context.Context) ([]string, error) {
	var names []string
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		names, err = queryAll(ctx, q, scanString, `SELECT name FROM worker_providers ORDER BY name`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: the workers' providers: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("store: the workers' providers: %w", ErrNotFound)
	}
	return names, nil
}
