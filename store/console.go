package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"chargeonce"
)

// ConsoleStore keeps what the operator's console needs of its own: the
// sessions of signed-in operators, the audit log of every operator action,
// the resolutions of settlement exceptions, and the reads that its pages
// show and no API route serves.
type ConsoleStore interface {
	// CreateSession stores a new session and deletes every session that
	// expired before s.CreatedAt, so that the table holds live sessions
	// only.
	CreateSession(ctx context.Context, s Session) error
	// Session returns the session whose token hashes to tokenHash, expired
	// or not, or ErrNotFound.
	Session(ctx context.Context, tokenHash string) (Session, error)
	// EndSession deletes the session; ending one that does not exist is no
	// error.
	EndSession(ctx context.Context, tokenHash string) error

	// AppendAudit stores e, whose ID it ignores, and returns it as stored,
	// with its ID. The log is append-only: the database refuses to update
	// or delete its rows.
	AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// AuditLog returns at most limit entries (1 to MaxAuditPage) whose ID
	// is below before, newest first; before <= 0 starts at the newest.
	AuditLog(ctx context.Context, before int64, limit int) ([]AuditEntry, error)

	// ResolveException stores the resolution of one exception of a
	// provider's report date unless that exception is resolved already, and returns the
	// resolution stored and whether this call created it. The first
	// resolution is kept. Whether the exception exists is the caller's
	// business: a resolution outlives the runs that found its exception.
	ResolveException(ctx context.Context, r ExceptionResolution) (stored ExceptionResolution, created bool, err error)
	// ExceptionResolutions returns the resolutions of the provider's report
	// date, by exception ID.
	ExceptionResolutions(ctx context.Context, provider, date string) (map[string]ExceptionResolution, error)
	// SettlementRuns returns at most limit (1 to MaxConsolePage) runs of
	// every provider, newest report date first and then by provider, with
	// their ByKind.
	SettlementRuns(ctx context.Context, limit int) ([]SettlementRun, error)

	// AttemptOutcomes counts the attempts created at or after since, by
	// UTC day, provider, status and currency, in that order.
	AttemptOutcomes(ctx context.Context, since time.Time) ([]AttemptOutcome, error)
	// OldestOpenAttempt returns the open attempt created first, without
	// its Requests, or ErrNotFound when none is open.
	OldestOpenAttempt(ctx context.Context) (Attempt, error)
	// SearchOrders returns the orders that match every field set in q,
	// newest first.
	SearchOrders(ctx context.Context, q OrderQuery) ([]Order, error)
	// OpenRefunds returns at most limit (1 to MaxConsolePage) pending
	// refunds, oldest first, without their Requests.
	OpenRefunds(ctx context.Context, limit int) ([]Refund, error)
}

// MaxConsolePage bounds one page of the console's lists.
const MaxConsolePage = 200

// MaxAuditPage bounds one page of the audit log.
const MaxAuditPage = 200

// MaxAuditRequest bounds, in bytes, the request body that an audit entry
// keeps; a longer body is cut by the caller and marked as cut.
const MaxAuditRequest = 8 << 10

// MaxResolutionNote bounds, in characters, the note that resolves a
// settlement exception.
const MaxResolutionNote = 1000

// CheckResolutionNote is the rule of the note that resolves a settlement
// exception: free text (chargeonce.ValidateText) of 1 to MaxResolutionNote
// characters that is not blank. The store refuses a resolution whose note
// breaks it, and the API answers 400 for one before it asks the store, so
// both take the rule from here and cannot drift apart. Like
// chargeonce.ValidateText, its error says what is wrong after the field's
// name, such as "is blank: …".
func CheckResolutionNote(note string) error {
	if err := chargeonce.ValidateText(note); err != nil {
		return err
	}
	if strings.TrimFunc(note, unicode.IsSpace) == "" {
		return errors.New("is blank: say what was done about the exception and why")
	}
	if n := utf8.RuneCountInString(note); n > MaxResolutionNote {
		return fmt.Errorf("has %d characters; at most %d are allowed", n, MaxResolutionNote)
	}
	return nil
}

// Session is one operator signed in to the console.
type Session struct {
	// TokenHash is the lower-case hex SHA-256 of the session cookie's
	// token; the token itself is never stored.
	TokenHash string
	// KeyID is the API key that signed in; each request checks it again,
	// so that revoking the key ends the session.
	KeyID string
	// CSRFToken is the token that every form of the session carries.
	CSRFToken string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Where an audited action came from.
const (
	AuditViaAPI     = "api"
	AuditViaConsole = "console"
)

// AuditEntry is one operator action as the audit log keeps it: who, what,
// when, the request and the result.
type AuditEntry struct {
	// ID orders the entries; the store assigns it.
	ID int64
	At time.Time
	// KeyID and KeyName name the API key that acted.
	KeyID   string
	KeyName string
	// Via is AuditViaAPI or AuditViaConsole.
	Via string
	// Action names what was done, such as "refund_order" or
	// "resolve_exception".
	Action string
	Method string
	Path   string
	// Request is the request body, at most MaxAuditRequest bytes.
	Request string
	// IdempotencyKey is the request's Idempotency-Key, empty when it had
	// none.
	IdempotencyKey string
	// Status is the HTTP status of the answer.
	Status int
	// Result says in one line what the answer was: what it created, or
	// the problem's detail.
	Result string
}

// ExceptionResolution is what a person decided about one settlement
// exception.
type ExceptionResolution struct {
	// Provider and Date name the books of the exception: the provider
	// whose report of that date the run matched.
	Provider string
	Date     string
	// ExceptionID is ExceptionID of the exception.
	ExceptionID string
	// Note says what was decided and why; CheckResolutionNote is its rule.
	Note string
	// KeyID and KeyName name the API key that resolved it.
	KeyID   string
	KeyName string
	At      time.Time
}

// exceptionIDLen is the length of ExceptionID's names, in hex characters.
const exceptionIDLen = 16

// ExceptionID names a settlement exception by what it is about, so that the
// name survives a rerun of the date, which renumbers the exceptions: 16 hex
// digits of a SHA-256 over the date, the kind, the charge, the refund, the
// merchant reference and the report line.
func ExceptionID(date string, e SettlementException) string {
	h := sha256.New()
	for _, s := range []string{date, string(e.Kind), e.ChargeID, e.RefundID, e.MerchantReference} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var line [8]byte
	binary.BigEndian.PutUint64(line[:], uint64(e.LineNo))
	h.Write(line[:])
	return hex.EncodeToString(h.Sum(nil)[:exceptionIDLen/2])
}

// ValidExceptionID reports whether id has the form of ExceptionID's names:
// 16 lower-case hex characters. The store refuses a resolution of any other
// id, and the API answers 400 for one before it reads the settlement, so
// both take the form from here, where the names are made.
func ValidExceptionID(id string) bool { return lowerHex(id, exceptionIDLen) }

// AttemptOutcome counts the attempts of one UTC day, provider, status and
// currency.
type AttemptOutcome struct {
	// Day is the UTC midnight that starts the day the attempts were
	// created on.
	Day      time.Time
	Provider string
	Status   chargeonce.AttemptStatus
	Currency string
	Count    int
	// Minor sums the attempts' amounts, in minor units of Currency.
	Minor int64
}

// OrderQuery selects orders; a zero field selects every order.
type OrderQuery struct {
	// ID selects one order.
	ID int64
	// Reference selects the order of the attempt with this merchant
	// reference.
	Reference string
	Status    chargeonce.OrderStatus
	// From and To select the orders created in [From, To).
	From, To time.Time
	// Before pages: it selects the orders whose ID is below it.
	Before int64
	// Limit is 1 to MaxConsolePage.
	Limit int
}
