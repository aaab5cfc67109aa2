package fakeprovider

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"chargeonce/internal/ownerfile"
)

// dataFileSchema is the version this code writes and reads, kept in SQLite's
// user_version. A file with a higher version was written by a newer fake
// provider and is refused rather than misread.
const dataFileSchema = 3

// schema creates the tables of a new data file: those of version 1, then
// what each later version added (upgrades), so that a new file and an
// upgraded one have the same shape. Charges, refunds and request records are kept in their API
// form, so that a restart serves exactly what was served before. A key is
// only ever written in the same transaction as what it made (see
// saveKeyed), so every stored key has a stored response.
const schema = `
CREATE TABLE mode (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	mode TEXT NOT NULL
) STRICT;
CREATE TABLE charges (
	seq    INTEGER PRIMARY KEY,
	charge TEXT NOT NULL
) STRICT;
CREATE TABLE keys (
	key           TEXT PRIMARY KEY,
	fingerprint   TEXT NOT NULL,
	first_seen_ns INTEGER NOT NULL,
	status        INTEGER NOT NULL,
	content_type  TEXT NOT NULL,
	body          BLOB NOT NULL,
	charge_id     TEXT NOT NULL,
	outcome       TEXT NOT NULL
) STRICT;
CREATE TABLE requests (
	seq    INTEGER PRIMARY KEY,
	record TEXT NOT NULL
) STRICT;
` + refundsSchema + holdsSchema

// upgrades[v] turns a file of version v into one of version v+1.
var upgrades = []string{1: refundsSchema, 2: holdsSchema}

// refundsSchema is what version 2 added to version 1: the refunds, and the
// refund a key made. A refund's row is rewritten when its status moves.
const refundsSchema = `
CREATE TABLE refunds (
	seq    INTEGER PRIMARY KEY,
	refund TEXT NOT NULL
) STRICT;
ALTER TABLE keys ADD COLUMN refund_id TEXT NOT NULL DEFAULT '';
`

// holdsSchema is what version 3 added to version 2: what a hold's charge
// object does not show, by charge id (see holdEntry). A hold's charge row
// is rewritten, with its hold row, when the hold moves.
const holdsSchema = `
CREATE TABLE holds (
	charge_id TEXT PRIMARY KEY,
	hold      TEXT NOT NULL
) STRICT;
`

// dataFile keeps the provider's state in a SQLite file. The Provider's maps
// stay the working state; every change is written here first, under
// Provider.mu, and the file is read once, at start.
type dataFile struct {
	db *sql.DB
}

// savedState is what a data file holds.
type savedState struct {
	// mode is nil in a new file.
	mode     *Mode
	charges  []Charge
	refunds  []refundEntry
	holds    []holdEntry
	keys     map[string]*keyEntry
	requests []RequestRecord
}

// openDataFile opens or creates the data file at path and reads it.
func openDataFile(path string) (*dataFile, savedState, error) {
	// The provider's books hold card tokens in clear text.
	if err := ownerfile.Restrict(path); err != nil {
		return nil, savedState{}, fmt.Errorf("data file %s: %w", path, err)
	}
	params := url.Values{}
	// In EXCLUSIVE locking mode the connection keeps the write lock from its
	// first write (New writes the mode) until it closes, which keeps a second
	// fake provider off the file: two would hand out the same charge ids.
	params.Add("_pragma", "locking_mode(EXCLUSIVE)")
	// synchronous stays at its default, FULL: a charge whose answer was sent
	// must survive a power loss too, or a replay after it would charge again.
	params.Add("_pragma", "journal_mode(WAL)")
	db, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return nil, savedState{}, dataFileError(path, err)
	}
	// Every use holds Provider.mu, so one connection is all there is to use,
	// and it holds the lock for as long as the provider runs.
	db.SetMaxOpenConns(1)
	f := &dataFile{db: db}
	state, err := f.init()
	if err != nil {
		_ = db.Close()
		return nil, savedState{}, dataFileError(path, err)
	}
	return f, state, nil
}

// Why a data file is refused, for people.
var (
	errDataFileCantOpen = errors.New("cannot open or create it: its directory must exist and be writable")
	errDataFileNotDB    = errors.New("not a SQLite database")
	errDataFileInUse    = errors.New("in use by another process")
	errDataFileForeign  = errors.New("a SQLite database, but not a fake provider's")
)

// dataFileError names the file and turns SQLite's codes into the reasons
// above.
func dataFileError(path string, err error) error {
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case sqlite3.SQLITE_CANTOPEN:
			err = errDataFileCantOpen
		case sqlite3.SQLITE_NOTADB:
			err = errDataFileNotDB
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			err = errDataFileInUse
		}
	}
	return fmt.Errorf("data file %s: %w", path, err)
}

// init creates the schema of a new file, or checks the version of an
// existing one, then reads it.
func (f *dataFile) init() (savedState, error) {
	var version int
	if err := f.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return savedState{}, err
	}
	switch {
	case version > dataFileSchema:
		return savedState{}, fmt.Errorf("schema version %d is newer than this fake provider's %d; run a newer one, or use another file", version, dataFileSchema)
	case version == 0:
		var tables int
		if err := f.db.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&tables); err != nil {
			return savedState{}, err
		}
		if tables > 0 {
			return savedState{}, errDataFileForeign
		}
		if err := f.inTx(func(tx *sql.Tx) error {
			_, err := tx.Exec(schema + fmt.Sprintf("PRAGMA user_version = %d;", dataFileSchema))
			return err
		}); err != nil {
			return savedState{}, err
		}
	case version < dataFileSchema:
		// A file of an older fake, before refunds or before holds: what it
		// holds stays, and the tables added since are created empty.
		if err := f.inTx(func(tx *sql.Tx) error {
			_, err := tx.Exec(strings.Join(upgrades[version:], "") + fmt.Sprintf("PRAGMA user_version = %d;", dataFileSchema))
			return err
		}); err != nil {
			return savedState{}, err
		}
	}
	return f.load()
}

// load reads the whole file.
func (f *dataFile) load() (savedState, error) {
	state := savedState{keys: make(map[string]*keyEntry)}
	var rawMode []byte
	switch err := f.db.QueryRow(`SELECT mode FROM mode`).Scan(&rawMode); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return savedState{}, err
	default:
		var m Mode
		if err := json.Unmarshal(rawMode, &m); err != nil {
			return savedState{}, fmt.Errorf("stored mode: %w", err)
		}
		if err := m.Validate(); err != nil {
			return savedState{}, fmt.Errorf("stored mode: %w", err)
		}
		state.mode = &m
	}
	var err error
	if state.charges, err = loadJSON[Charge](f.db, `SELECT charge FROM charges ORDER BY seq`); err != nil {
		return savedState{}, fmt.Errorf("stored charges: %w", err)
	}
	if state.requests, err = loadJSON[RequestRecord](f.db, `SELECT record FROM requests ORDER BY seq`); err != nil {
		return savedState{}, fmt.Errorf("stored requests: %w", err)
	}
	if state.refunds, err = loadJSON[refundEntry](f.db, `SELECT refund FROM refunds ORDER BY seq`); err != nil {
		return savedState{}, fmt.Errorf("stored refunds: %w", err)
	}
	if state.holds, err = loadJSON[holdEntry](f.db, `SELECT hold FROM holds`); err != nil {
		return savedState{}, fmt.Errorf("stored holds: %w", err)
	}
	rows, err := f.db.Query(`SELECT key, fingerprint, first_seen_ns, status, content_type, body, charge_id, refund_id, outcome FROM keys`)
	if err != nil {
		return savedState{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key       string
			firstSeen int64
			e         = &keyEntry{resp: &storedResponse{}, done: closedChan()}
		)
		if err := rows.Scan(&key, &e.fingerprint, &firstSeen, &e.resp.status, &e.resp.contentType, &e.resp.body, &e.resp.chargeID, &e.resp.refundID, &e.resp.outcome); err != nil {
			return savedState{}, fmt.Errorf("stored keys: %w", err)
		}
		e.firstSeen = time.Unix(0, firstSeen)
		state.keys[key] = e
	}
	if err := rows.Err(); err != nil {
		return savedState{}, fmt.Errorf("stored keys: %w", err)
	}
	return state, nil
}

// loadJSON reads rows of one JSON column into a slice of T.
func loadJSON[T any](db *sql.DB, query string) ([]T, error) {
	rows, err := db.Query(query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (f *dataFile) inTx(fn func(*sql.Tx) error) error {
	tx, err := f.db.Begin()
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the error of fn is the one that matters
		return err
	}
	return tx.Commit()
}

// saveMode replaces the stored mode.
func (f *dataFile) saveMode(m Mode) error {
	raw, _ := json.Marshal(m)
	_, err := f.db.Exec(`INSERT OR REPLACE INTO mode (id, mode) VALUES (1, ?)`, string(raw))
	return err
}

// execer is a database or a transaction, for the writes that run in
// either.
type execer interface {
	Exec(query string, args ...any) (sql.Result, error)
}

// saveKeyed stores the finished key e together with the rows that save
// writes for what the key made: a key is durable exactly when what it made
// is.
//
// A key still being processed is never written. If the process dies before
// this commit, nothing was made, and after a restart the key is unknown:
// the client's retry with it is processed afresh, as a real provider's
// would be when its request died before anything was charged or refunded.
// Storing keys in flight would cost a write per request only for the
// restart to forget them again.
func (f *dataFile) saveKeyed(key string, e *keyEntry, save func(execer) error) error {
	return f.inTx(func(tx *sql.Tx) error {
		if err := save(tx); err != nil {
			return err
		}
		// REPLACE, because an expired key that was used again is forgotten in
		// memory only; its new answer overwrites it here.
		_, err := tx.Exec(`INSERT OR REPLACE INTO keys (key, fingerprint, first_seen_ns, status, content_type, body, charge_id, refund_id, outcome)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			key, e.fingerprint, e.firstSeen.UnixNano(), e.resp.status, e.resp.contentType, e.resp.body, e.resp.chargeID, e.resp.refundID, e.resp.outcome)
		return err
	})
}

// insertCharge writes a new charge.
func insertCharge(db execer, seq int, c Charge) error {
	raw, _ := json.Marshal(c)
	_, err := db.Exec(`INSERT INTO charges (seq, charge) VALUES (?, ?)`, seq, string(raw))
	return err
}

// saveHoldMove rewrites the charge of seq, a hold that moved, and its hold
// row.
func saveHoldMove(db execer, seq int, c Charge, h holdEntry) error {
	raw, _ := json.Marshal(c)
	if _, err := db.Exec(`UPDATE charges SET charge = ? WHERE seq = ?`, string(raw), seq); err != nil {
		return err
	}
	raw, _ = json.Marshal(h)
	_, err := db.Exec(`INSERT OR REPLACE INTO holds (charge_id, hold) VALUES (?, ?)`, h.ChargeID, string(raw))
	return err
}

// saveRequest appends a request record.
func (f *dataFile) saveRequest(rec RequestRecord) error {
	raw, _ := json.Marshal(rec)
	_, err := f.db.Exec(`INSERT INTO requests (record) VALUES (?)`, string(raw))
	return err
}

// reset forgets every charge, hold, refund, key and request record; the
// mode stays.
func (f *dataFile) reset() error {
	return f.inTx(func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM charges; DELETE FROM holds; DELETE FROM refunds; DELETE FROM keys; DELETE FROM requests;`)
		return err
	})
}

// forgetKeys deletes the given keys.
func (f *dataFile) forgetKeys(keys []string) error {
	return f.inTx(func(tx *sql.Tx) error {
		stmt, err := tx.Prepare(`DELETE FROM keys WHERE key = ?`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, k := range keys {
			if _, err := stmt.Exec(k); err != nil {
				return err
			}
		}
		return nil
	})
}

func (f *dataFile) close() error {
	return f.db.Close()
}
