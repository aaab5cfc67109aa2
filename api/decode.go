package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"chargeonce"
	"chargeonce/api/wire"
)

// maxBodyBytes caps every request body.
const maxBodyBytes = 64 << 10

// decodeJSON reads the body of r into dst: a single JSON object of at most
// maxBodyBytes, sent as application/json, with no unknown fields and nothing
// after it.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return badRequest("the Content-Type must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return badRequest("the body must be UTF-8, not %q", cs)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return badRequest("%s", describeJSONError(err))
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return badRequest("%s", describeJSONError(err))
		}
		return badRequest("the body must hold a single JSON object and nothing after it")
	}
	return nil
}

// describeJSONError turns a decoding error into a message for the client.
func describeJSONError(err error) string {
	var (
		tooLarge  *http.MaxBytesError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Sprintf("the body is over %d KiB", maxBodyBytes>>10)
	case errors.Is(err, io.EOF):
		return "the body is empty; a JSON object is required"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is truncated JSON"
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("the body is not valid JSON at byte %d", syntaxErr.Offset)
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Sprintf("field %q must be a JSON %s", typeErr.Field, expectedJSONType(typeErr))
	case errors.As(err, &typeErr):
		return "the body must be a JSON object"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json reports unknown fields only through this message.
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "the body is not valid JSON"
}

func expectedJSONType(e *json.UnmarshalTypeError) string {
	if e.Type.Kind() == reflect.String {
		return `string, such as "548.90"`
	}
	return e.Type.String()
}

// parseCreateOrder checks the body of POST /api/orders and returns the
// amount and the description.
func parseCreateOrder(c wire.CreateOrderRequest) (chargeonce.Money, string, error) {
	if c.Amount == nil {
		return chargeonce.Money{}, "", badRequest(`field "amount" is required, as a decimal string such as "548.90"`)
	}
	if c.Currency == nil {
		return chargeonce.Money{}, "", badRequest(`field "currency" is required, as an ISO 4217 code such as "TRY"`)
	}
	amount, err := chargeonce.ParseMoney(*c.Amount, *c.Currency)
	if err != nil {
		return chargeonce.Money{}, "", badRequest("%v", err)
	}
	if err := chargeonce.ValidateDescription(c.Description); err != nil {
		return chargeonce.Money{}, "", badRequest(`field "description" %v`, err)
	}
	return amount, c.Description, nil
}

// validateCheckout checks the body of POST /api/orders/{id}/checkout.
func validateCheckout(c wire.CheckoutRequest) error {
	if err := chargeonce.ValidateCardToken(c.CardToken); err != nil {
		return badRequest(`field "card_token" %v`, err)
	}
	return nil
}

// orderID reads the {id} path value: a positive int64.
func orderID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	// Only the canonical form names an order: no sign, no leading zeros.
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != raw {
		return 0, badRequest("order id %q must be a positive integer", raw)
	}
	return id, nil
}
