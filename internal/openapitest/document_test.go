package openapitest

import (
	"encoding/json"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/stretchr/testify/require"

	"chargeonce/docs"
)

// The document is a valid OpenAPI 3.1 document, and every example it
// gives of a schema is valid against that schema: an example is what a
// merchant copies first.
func TestDocument_IsValidAndSoAreItsExamples(t *testing.T) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	require.NoError(t, err)
	v, errs := validator.NewValidator(doc)
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	require.True(t, ok, "%v", describe("document", verrs))

	model, err := doc.BuildV3Model()
	require.NoError(t, err)
	schemas := schema_validation.NewSchemaValidator(config.WithFormatAssertions())
	examples := 0
	for name, proxy := range model.Model.Components.Schemas.FromOldest() {
		s := proxy.Schema()
		for _, example := range s.Examples {
			var value any
			require.NoError(t, example.Decode(&value))
			raw, err := json.Marshal(value)
			require.NoError(t, err)
			ok, verrs := schemas.ValidateSchemaBytesWithVersion(s, raw, 3.1)
			require.True(t, ok, "the example of %s: %v", name, describe("example", verrs))
			examples++
		}
	}
	require.Positive(t, examples)
}
