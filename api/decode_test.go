package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/docs"
)

// TestRequestSchemas_RefuseWhatTheDocumentRefuses: for every request body
// in docs/openapi.json, leaving out a member its schema requires, or
// sending null for one it does not make nullable, is a 400.
func TestRequestSchemas_RefuseWhatTheDocumentRefuses(t *testing.T) {
	var d struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Ref string `json:"$ref"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(docs.OpenAPI, &d))
	schemas := map[string]bool{}
	for _, ops := range d.Paths {
		for _, op := range ops {
			if ref := op.RequestBody.Content["application/json"].Schema.Ref; ref != "" {
				schemas[ref[len("#/components/schemas/"):]] = true
			}
		}
	}
	require.Contains(t, schemas, "RefundRequest")
	for name := range schemas {
		rules := requestSchemas[name]
		// body has every required member but skip, and member as value.
		body := func(skip, member string, value any) []byte {
			b := map[string]any{}
			for _, r := range rules.required {
				if r != skip {
					b[r] = "x"
				}
			}
			if member != "" {
				b[member] = value
			}
			data, err := json.Marshal(b)
			require.NoError(t, err)
			return data
		}
		for _, member := range rules.required {
			t.Run(name+"/without "+member, func(t *testing.T) {
				requireBadRequest(t, requestSchemas.check(name, body(member, "", nil)), `field "`+member+`" is required`)
			})
		}
		for member, nullable := range rules.nullable {
			if nullable {
				continue
			}
			t.Run(name+"/null "+member, func(t *testing.T) {
				requireBadRequest(t, requestSchemas.check(name, body("", member, nil)), `field "`+member+`" must not be null`)
			})
		}
	}
}
