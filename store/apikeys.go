package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"chargeonce/internal/apikey"
)

const apiKeyColumns = `id, name, secret_hash, scopes, created_at, revoked_at`

// errUnknownAPIKey is both of the store's not-found and apikey's unknown
// key, so that either caller's check holds.
var errUnknownAPIKey = fmt.Errorf("%w: %w", ErrNotFound, apikey.ErrUnknown)

func (s *db) CreateAPIKey(ctx context.Context, r apikey.Record) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("store: create API key: %w", err)
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		_, err := q.exec(ctx, `INSERT INTO api_keys (`+apiKeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			r.ID, r.Name, r.Hash, apikey.FormatScopes(r.Scopes), s.t(r.CreatedAt), s.optionalTime(r.RevokedAt))
		if s.d.uniqueViolation(err) {
			return fmt.Errorf("%w: an API key with id %s exists", ErrConflict, r.ID)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store: create API key %s: %w", r.ID, err)
	}
	return nil
}

func (s *db) APIKey(ctx context.Context, id string) (apikey.Record, error) {
	var r apikey.Record
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		r, err = apiKeyByID(ctx, q, id)
		return err
	})
	if err != nil {
		return apikey.Record{}, fmt.Errorf("store: API key %s: %w", id, err)
	}
	return r, nil
}

// apiKeyByID reads the key id in q's transaction; an id that names no key
// is errUnknownAPIKey.
func apiKeyByID(ctx context.Context, q querier, id string) (apikey.Record, error) {
	r, err := queryOne(ctx, q, scanAPIKey, `SELECT `+apiKeyColumns+` FROM api_keys WHERE id = $1`, id)
	if errors.Is(err, ErrNotFound) {
		return apikey.Record{}, errUnknownAPIKey
	}
	return r, err
}

func (s *db) APIKeys(ctx context.Context) ([]apikey.Record, error) {
	var all []apikey.Record
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		all, err = queryAll(ctx, q, scanAPIKey, `SELECT `+apiKeyColumns+` FROM api_keys ORDER BY created_at, id`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list API keys: %w", err)
	}
	return all, nil
}

func (s *db) RevokeAPIKey(ctx context.Context, id string, at time.Time) (apikey.Record, error) {
	if at.IsZero() {
		return apikey.Record{}, fmt.Errorf("store: revoke API key %s: the time is missing", id)
	}
	var r apikey.Record
	err := s.txs.inTx(ctx, true, func(q querier) error {
		// Only ever earlier: a second revocation cannot extend a key's life.
		if _, err := q.exec(ctx, `UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND (revoked_at IS NULL OR revoked_at > $2)`,
			id, s.t(at)); err != nil {
			return err
		}
		var err error
		r, err = apiKeyByID(ctx, q, id)
		return err
	})
	if err != nil {
		return apikey.Record{}, fmt.Errorf("store: revoke API key %s: %w", id, err)
	}
	return r, nil
}

// optionalTime is the argument of a nullable time column.
func (s *db) optionalTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.t(*t)
}

func scanAPIKey(r rows) (apikey.Record, error) {
	var (
		k                apikey.Record
		scopes           string
		created, revoked timestamp
	)
	if err := r.Scan(&k.ID, &k.Name, &k.Hash, &scopes, &created, &revoked); err != nil {
		return apikey.Record{}, err
	}
	var err error
	if k.Scopes, err = apikey.ParseScopes(scopes); err != nil {
		return apikey.Record{}, errCorrupt("API key", k.ID, err)
	}
	if k.CreatedAt, err = created.required("created_at"); err != nil {
		return apikey.Record{}, errCorrupt("API key", k.ID, err)
	}
	if revoked.valid {
		k.RevokedAt = &revoked.t
	}
	return k, nil
}
