package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"chargeonce/api/wire"
	"chargeonce/internal/idemkey"
	"chargeonce/store"
)

// The audit trail (docs/checkout-api.md#audit-trail): every request to a
// state-changing operator route that its key was allowed to make is one
// entry of the audit log, with the key, the request's body and the
// answer's status and result.

const (
	// cutMark ends the request of an entry whose body was longer than
	// store.MaxAuditRequest bytes.
	cutMark = "…(cut)"
	// maxAuditResult bounds, in bytes, the result of an entry.
	maxAuditResult = 1000
	// maxProblemCapture bounds the problem body that audited reads its
	// detail from; the API's problems are far smaller.
	maxProblemCapture = 16 << 10
	// auditTimeout bounds the append of one entry. It runs after the
	// answer, even when the client has gone: the action happened.
	auditTimeout = 5 * time.Second
	// defaultAuditPage is the limit of GET /api/audit-log when none is
	// given.
	defaultAuditPage = 50
)

// audited serves next and appends the request to the audit log as action.
// It goes inside require, so that only the requests that passed the key
// and scope checks are entries. The entry keeps the request body (its
// first store.MaxAuditRequest bytes, marked when cut; next reads the whole
// body), the status written and a one-line result: the Location of a 2xx
// answer, else "ok", or the detail of a problem. It never keeps an
// answer's body, which may hold a secret, such as an endpoint's. A failed
// append is logged; the answer is already given.
func (s *server) audited(action string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		request := bufferAuditRequest(r)
		aw := &auditWriter{ResponseWriter: w}
		answered := false
		defer func() {
			status, result := aw.status, aw.result()
			switch {
			case answered && status == 0:
				// Nothing written is net/http's 200.
				status = http.StatusOK
			case !answered:
				// next panicked; recoverPanics answers 500 once the panic
				// reaches it, unless next had answered.
				if status == 0 {
					status = http.StatusInternalServerError
				}
				result = "the request failed: an internal error"
			}
			s.appendAudit(r, action, request, status, result)
		}()
		next(aw, r)
		answered = true
	}
}

// appendAudit stores the entry of one audited request.
func (s *server) appendAudit(r *http.Request, action, request string, status int, result string) {
	info := infoOf(r)
	via := store.AuditViaAPI
	if info.via != "" {
		via = info.via
	}
	key, err := idemkey.Parse(r.Header.Values(idemkey.Header))
	if err != nil {
		key = ""
	}
	e := store.AuditEntry{
		At: time.Now().UTC(), KeyID: info.key.ID, KeyName: info.key.Name, Via: via, Action: action,
		Method: r.Method, Path: storable(r.URL.Path), Request: request, IdempotencyKey: key, Status: status, Result: result,
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
	defer cancel()
	if _, err := s.store.AppendAudit(ctx, e); err != nil {
		s.log.Error("audit entry not stored", "action", action, "method", r.Method, "path", r.URL.Path,
			"status", status, "key_id", info.key.ID, "error", err)
	}
}

// bufferAuditRequest reads the first bytes of r's body for the audit log,
// and puts them back in front of the rest, so that the handler reads the
// body whole, under its own bound, and any error reading it.
func bufferAuditRequest(r *http.Request) string {
	if r.Body == nil || r.Body == http.NoBody {
		return ""
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, store.MaxAuditRequest+1))
	var rest io.Reader = r.Body
	if err != nil {
		rest = errReader{err}
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), rest), r.Body}
	return auditText(head, len(head) > store.MaxAuditRequest)
}

// auditText is body as the audit log keeps it: valid UTF-8 without NUL, at
// most store.MaxAuditRequest bytes, ending with cutMark when cut (more
// says that body is only its start).
func auditText(body []byte, more bool) string {
	s := storable(string(body))
	if !more && len(s) <= store.MaxAuditRequest {
		return s
	}
	return cutText(s, store.MaxAuditRequest-len(cutMark)) + cutMark
}

// storable is s as a text column holds it: valid UTF-8 without NUL, each
// invalid byte and NUL shown as U+FFFD.
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// cutText cuts s to at most n bytes, between characters.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

type readCloser struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// auditWriter remembers the status of an answer, its Location, and the
// body of a problem, for the audit entry.
type auditWriter struct {
	http.ResponseWriter
	status  int
	problem []byte
	// isProblem says that the answer is application/problem+json.
	isProblem bool
}

func (a *auditWriter) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
		mediaType, _, _ := mime.ParseMediaType(a.Header().Get("Content-Type"))
		a.isProblem = mediaType == "application/problem+json"
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *auditWriter) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.WriteHeader(http.StatusOK)
	}
	if a.isProblem && len(a.problem) < maxProblemCapture {
		a.problem = append(a.problem, b[:min(len(b), maxProblemCapture-len(a.problem))]...)
	}
	return a.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (a *auditWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// result is the answer in one line: the Location of a 2xx answer, else
// "ok"; the problem's detail, else its title, else the status's text.
func (a *auditWriter) result() string {
	status := a.status
	if status == 0 {
		status = http.StatusOK
	}
	if status < http.StatusBadRequest {
		if loc := a.Header().Get("Location"); loc != "" {
			return oneLine(loc)
		}
		return "ok"
	}
	var p wire.Problem
	if a.isProblem && json.Unmarshal(a.problem, &p) == nil {
		switch {
		case p.Detail != "":
			return oneLine(p.Detail)
		case p.Title != "":
			return oneLine(p.Title)
		}
	}
	return strconv.Itoa(status) + " " + http.StatusText(status)
}

// oneLine is s on one line, valid UTF-8, at most maxAuditResult bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(storable(s)), " ")
	if len(s) > maxAuditResult {
		s = cutText(s, maxAuditResult-len("…")) + "…"
	}
	return s
}

// auditPage reads the before and limit query parameters of
// GET /api/audit-log.
func auditPage(r *http.Request) (before int64, limit int, err error) {
	q := r.URL.Query()
	limit = defaultAuditPage
	if values, given := q["limit"]; given {
		n, err := strconv.Atoi(values[0])
		if len(values) != 1 || err != nil || n < 1 || n > store.MaxAuditPage || strconv.Itoa(n) != values[0] {
			return 0, 0, badRequest("the query parameter limit is a whole number from 1 to %d, given once", store.MaxAuditPage)
		}
		limit = n
	}
	if values, given := q["before"]; given {
		n, err := strconv.ParseInt(values[0], 10, 64)
		if len(values) != 1 || err != nil || n < 1 || strconv.FormatInt(n, 10) != values[0] {
			return 0, 0, badRequest("the query parameter before is a positive whole number, given once: the nextBefore of the previous page")
		}
		before = n
	}
	return before, limit, nil
}

func (s *server) auditLog(w http.ResponseWriter, r *http.Request) {
	before, limit, err := auditPage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entries, err := s.store.AuditLog(r.Context(), before, limit)
	if err != nil {
		s.fail(w, r, fmt.Errorf("audit log: %w", err))
		return
	}
	body := wire.AuditLog{Entries: make([]wire.AuditEntry, 0, len(entries))}
	for _, e := range entries {
		body.Entries = append(body.Entries, wire.AuditEntry{
			ID: e.ID, At: e.At.UTC(), KeyID: e.KeyID, KeyName: e.KeyName, Via: e.Via, Action: e.Action,
			Method: e.Method, Path: e.Path, Request: e.Request, IdempotencyKey: optional(e.IdempotencyKey),
			Status: e.Status, Result: e.Result,
		})
	}
	if len(entries) == limit && limit > 0 {
		next := entries[len(entries)-1].ID
		body.NextBefore = &next
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", body)
}
