package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/strictjson"
)

// maxBodyBytes caps every request body.
const maxBodyBytes = 64 << 10

// decodeJSON reads the body of r into dst: a single JSON object of at most
// maxBodyBytes, sent as application/json, read by strictjson (exact field
// names, no duplicate or unknown fields, valid UTF-8, nothing after it).
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return badRequest("the Content-Type must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return badRequest("the body must be UTF-8, not %q", cs)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return readError(err)
	}
	if err := strictjson.Unmarshal(body, dst); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// readError is the answer to a body that could not be read: over
// maxBodyBytes, or cut off by the client.
func readError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return badRequest("the body is over %d KiB", maxBodyBytes>>10)
	}
	return badRequest("the body could not be read: %v", err)
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
