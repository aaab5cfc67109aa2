package store

import (
	"context"
	"errors"
	"time"
)

// The methods of ConsoleStore, to be written.
var errTODO = errors.New("store: not written yet")

func (s *db) CreateSession(ctx context.Context, x Session) error { return errTODO }
func (s *db) Session(ctx context.Context, tokenHash string) (Session, error) {
	return Session{}, errTODO
}
func (s *db) EndSession(ctx context.Context, tokenHash string) error { return errTODO }
func (s *db) AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	return AuditEntry{}, errTODO
}
func (s *db) AuditLog(ctx context.Context, before int64, limit int) ([]AuditEntry, error) {
	return nil, errTODO
}
func (s *db) ResolveException(ctx context.Context, r ExceptionResolution) (ExceptionResolution, bool, error) {
	return ExceptionResolution{}, false, errTODO
}
func (s *db) ExceptionResolutions(ctx context.Context, date string) (map[string]ExceptionResolution, error) {
	return nil, errTODO
}
func (s *db) SettlementRuns(ctx context.Context, limit int) ([]SettlementRun, error) {
	return nil, errTODO
}
func (s *db) AttemptOutcomes(ctx context.Context, since time.Time) ([]AttemptOutcome, error) {
	return nil, errTODO
}
func (s *db) OldestOpenAttempt(ctx context.Context) (Attempt, error) { return Attempt{}, errTODO }
func (s *db) SearchOrders(ctx context.Context, q OrderQuery) ([]Order, error) {
	return nil, errTODO
}
func (s *db) OpenRefunds(ctx context.Context, limit int) ([]Refund, error) { return nil, errTODO }
