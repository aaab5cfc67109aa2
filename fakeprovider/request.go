package fakeprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/currency"

	"chargeonce"
	"chargeonce/internal/idemkey"
	"chargeonce/internal/strictjson"
)

const (
	maxBodyBytes         = 64 << 10
	maxSourceLength      = 255
	maxReferenceLength   = 255
	maxDescriptionLength = 1000
)

// parseKey reads the Idempotency-Key header values as idemkey reads them,
// a bare Token accepted too, and answers a refused header with the
// problem its error calls for.
func parseKey(values []string) (string, *problem) {
	key, err := idemkey.ParseTokenToo(values)
	switch {
	case err == nil:
		return key, nil
	case errors.Is(err, idemkey.ErrMissing):
		return "", newProblem(codeInvalidKey, msgKeyMissing)
	case errors.Is(err, idemkey.ErrEmpty):
		return "", newProblem(codeInvalidKey, msgKeyEmpty)
	case errors.Is(err, idemkey.ErrTooLong):
		return "", newProblem(codeInvalidKey, msgKeyTooLong)
	default:
		return "", newProblem(codeInvalidKey, msgKeyMalformed)
	}
}

// chargeRequest is the body of POST /v1/charges. Its fields are declared in
// alphabetical order of their JSON names, so that encoding it yields the
// canonical form the fingerprint is taken over: keys sorted, no whitespace.
// Keep them sorted.
type chargeRequest struct {
	Amount int64 `json:"amount"`
	// Capture false asks for a hold. decodeCharge leaves it nil when absent
	// or true, so that a charge captured at once keeps the fingerprint it
	// had before holds existed.
	Capture           *bool  `json:"capture,omitempty"`
	Currency          string `json:"currency"`
	Description       string `json:"description,omitempty"`
	MerchantReference string `json:"merchant_reference"`
	Source            string `json:"source"`
}

// fingerprint is the hex SHA-256 of salt and the canonical form of req, a
// request type whose fields are sorted by JSON name. The salt tells the
// dialects and the kinds of request apart, so that a key first used in one
// is reused with another request in the other.
func fingerprint(salt string, req any) string {
	canonical, _ := json.Marshal(req)
	sum := sha256.Sum256(append([]byte(salt), canonical...))
	return hex.EncodeToString(sum[:])
}

// hold reports whether r asks for an authorization only.
func (r chargeRequest) hold() bool {
	return r.Capture != nil && !*r.Capture
}

// amountProblem checks an amount and its currency, as charges, refunds and
// captures take them; a currency that is not required may be left empty.
func amountProblem(amount int64, currency string, currencyRequired bool) *problem {
	switch {
	case amount <= 0:
		return invalidField("amount", msgAmount)
	case amount > chargeonce.MaxMinor(currency):
		return invalidField("amount", msgAmountTooLarge)
	case (currency != "" || currencyRequired) && !isISO4217(currency):
		return invalidField("currency", msgCurrency)
	}
	return nil
}

// validate reports the first invalid field, in the order of the contract.
func (r chargeRequest) validate() *problem {
	if p := amountProblem(r.Amount, r.Currency, true); p != nil {
		return p
	}
	switch {
	case r.Source == "":
		return invalidField("source", msgSourceMissing)
	case len(r.Source) <= len("tok_") || !strings.HasPrefix(r.Source, "tok_"):
		return fieldProblem(codeSourceRefused, "source", msgSourceNotToken)
	case len(r.Source) > maxSourceLength:
		return invalidField("source", msgSourceTooLong)
	case r.MerchantReference == "":
		return invalidField("merchant_reference", msgReferenceMissing)
	case len(r.MerchantReference) > maxReferenceLength:
		return invalidField("merchant_reference", msgReferenceTooLong)
	case utf8.RuneCountInString(r.Description) > maxDescriptionLength:
		return invalidField("description", msgDescriptionLong)
	}
	return nil
}

// isISO4217 accepts a recognised ISO 4217 code in its canonical upper-case
// spelling; currency.ParseISO alone would also accept "try".
func isISO4217(code string) bool {
	unit, err := currency.ParseISO(code)
	return err == nil && unit.String() == code
}

// decodeCharge reads and validates a charge request.
func decodeCharge(w http.ResponseWriter, r *http.Request) (chargeRequest, *problem) {
	var req chargeRequest
	if p := decodeJSON(w, r, &req); p != nil {
		return chargeRequest{}, p
	}
	if p := req.validate(); p != nil {
		return chargeRequest{}, p
	}
	if !req.hold() {
		req.Capture = nil
	}
	return req, nil
}

// decodeJSON strictly decodes a JSON object body into dst: the content type
// must be JSON and the body at most maxBodyBytes, read by strictjson (exact
// field names, no duplicate or unknown fields, valid UTF-8, nothing after
// the object).
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) *problem {
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		return newProblem(codeInvalidRequest, msgContentType)
	}
	body, p := readBody(w, r)
	if p != nil {
		return p
	}
	return decodeProblem(strictjson.Unmarshal(body, dst))
}

// decodeEmptyJSON accepts a body that is empty, or the empty JSON object
// under a JSON content type, as the requests that carry nothing take it.
func decodeEmptyJSON(w http.ResponseWriter, r *http.Request) *problem {
	body, p := readBody(w, r)
	switch {
	case p != nil:
		return p
	case len(body) == 0:
		return nil
	case !isJSONContentType(r.Header.Get("Content-Type")):
		return newProblem(codeInvalidRequest, msgContentType)
	}
	return decodeProblem(strictjson.Unmarshal(body, &struct{}{}))
}

// readBody reads a request body of at most maxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *problem) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, newProblem(codeInvalidRequest, msgBodyTooLarge)
	case err != nil:
		return nil, newProblem(codeInvalidRequest, "request body could not be read: "+err.Error())
	}
	return body, nil
}

func isJSONContentType(header string) bool {
	mediaType, params, err := mime.ParseMediaType(header)
	if err != nil || mediaType != contentTypeJSON {
		return false
	}
	charset, ok := params["charset"]
	return !ok || strings.EqualFold(charset, "utf-8")
}

// decodeProblem turns a decoding error into a 400 that names the field when
// there is one; nil stays nil.
func decodeProblem(err error) *problem {
	var strict *strictjson.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &strict):
		return invalidField(strict.Field, strict.Error())
	}
	// What remains are errors from a type's own UnmarshalJSON, which are
	// written for people.
	return newProblem(codeInvalidRequest, err.Error())
}
