package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/checkout"
	"chargeonce/docs"
	"chargeonce/internal/strictjson"
)

// maxBodyBytes caps every request body.
const maxBodyBytes = 64 << 10

// decodeJSON reads the body of r into dst: a single JSON object of at most
// maxBodyBytes, sent as application/json, read by strictjson (exact field
// names, no duplicate or unknown fields, valid UTF-8, nothing after it),
// with every member that the schema of dst's type in docs/openapi.json
// requires, and no null where that schema allows none.
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
	return requestSchemas.check(reflect.TypeOf(dst).Elem().Name(), body)
}

// memberRules are the rules of a request body's schema in docs/openapi.json
// that its Go type cannot tell strictjson: which members are required, and
// which may be null.
type memberRules struct {
	required []string
	nullable map[string]bool
}

// schemaRules are the memberRules of the document's schemas, by name.
type schemaRules map[string]memberRules

// requestSchemas are the rules of the document, which owns them: a request
// body is read under the schema named as its wire type, so that what the
// document refuses the API refuses too.
var requestSchemas = mustSchemaRules(docs.OpenAPI)

func mustSchemaRules(document []byte) schemaRules {
	var d struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string `json:"required"`
				Properties map[string]struct {
					Type any `json:"type"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(document, &d); err != nil {
		panic("api: docs/openapi.json cannot be read: " + err.Error())
	}
	rules := schemaRules{}
	for name, s := range d.Components.Schemas {
		r := memberRules{required: s.Required, nullable: map[string]bool{}}
		for member, p := range s.Properties {
			types, _ := p.Type.([]any)
			r.nullable[member] = slices.Contains(types, any("null"))
		}
		rules[name] = r
	}
	return rules
}

// check refuses a body, already read by strictjson as one object, that
// leaves out a member its schema requires or has null where the schema
// allows none.
func (rules schemaRules) check(schema string, body []byte) error {
	r, ok := rules[schema]
	if !ok {
		return fmt.Errorf("docs/openapi.json has no schema %s for a request body", schema)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return badRequest("%v", err)
	}
	for _, name := range r.required {
		if _, ok := members[name]; !ok {
			return badRequest("field %q is required", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if string(members[name]) == "null" && !r.nullable[name] {
			return badRequest("field %q must not be null: send a value, or leave the field out where it is optional", name)
		}
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
// validateCheckout checks a checkout's body and reads how it captures.
func validateCheckout(c wire.CheckoutRequest) (checkout.Capture, error) {
	if err := chargeonce.ValidateCardToken(c.CardToken); err != nil {
		return checkout.Capture{}, badRequest(`field "card_token" %v`, err)
	}
	// An absent mode is the merchant's; an empty one is no mode at all.
	var capture checkout.Capture
	if c.Capture != nil {
		if capture.Mode = chargeonce.CaptureMode(*c.Capture); capture.Mode == "" || !capture.Mode.Valid() {
			return checkout.Capture{}, badRequest(`field "capture" is %q; it is %q or %q, or absent for the merchant's mode`,
				*c.Capture, chargeonce.CaptureAutomatic, chargeonce.CaptureManual)
		}
	}
	if c.OnDeadline != nil {
		if capture.OnDeadline = chargeonce.DeadlineAction(*c.OnDeadline); capture.OnDeadline == "" || !capture.OnDeadline.Valid() {
			return checkout.Capture{}, badRequest(`field "on_deadline" is %q; it is %q or %q`, *c.OnDeadline, chargeonce.DeadlineVoid, chargeonce.DeadlineCapture)
		}
		if !capture.Mode.Manual() {
			return checkout.Capture{}, badRequest(`field "on_deadline" is only for a manual capture: send it with "capture": %q`, chargeonce.CaptureManual)
		}
	}
	return capture, nil
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
