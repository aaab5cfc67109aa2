// Package docs holds the checkout API's OpenAPI document, docs/openapi.json:
// the one owner of the API's wire format. The API serves it at
// GET /openapi.json, and internal/openapitest validates every API test's
// requests and answers against it.
package docs

import _ "embed"

// OpenAPI is docs/openapi.json, the OpenAPI 3.1 document of the checkout
// API, as the repository holds it.
//
//go:embed openapi.json
var OpenAPI []byte
