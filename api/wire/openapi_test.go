package wire

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/docs"
)

// bodySchemas maps each body of this package to its schema in
// docs/openapi.json, the owner of the wire format, and says whether the
// API writes it (an answer, whose schema requires every field that is not
// omitempty) or reads it (a request, whose schema's required fields are
// the API's rules).
var bodySchemas = []struct {
	body     any
	schema   string
	response bool
}{
	{CreateOrderRequest{}, "CreateOrderRequest", false},
	{CheckoutRequest{}, "CheckoutRequest", false},
	{Order{}, "Order", true},
	{Attempt{}, "Attempt", true},
	{ProviderRequest{}, "ProviderRequest", true},
	{CheckoutAnswer{}, "CheckoutAnswer", true},
	{RefundRequest{}, "RefundRequest", false},
	{Refund{}, "Refund", true},
	{CaptureRequest{}, "CaptureRequest", false},
	{VoidRequest{}, "VoidRequest", false},
	{Move{}, "Move", true},
	{Hold{}, "Hold", true},
	{Settlement{}, "Settlement", true},
	{SettlementTotal{}, "SettlementTotal", true},
	{SettlementException{}, "SettlementException", true},
	{Amount{}, "Amount", true},
	{SettlementRunning{}, "SettlementRunning", true},
	{SettlementRunRequest{}, "SettlementRunRequest", false},
	{EventReceipt{}, "EventReceipt", true},
	{Health{}, "Health", true},
	{Problem{}, "Problem", true},
	{Event{}, "Event", true},
	{EventData{}, "EventData", true},
	{EventPayment{}, "EventPayment", true},
	{EventRefund{}, "EventRefund", true},
	{EventList{}, "EventList", true},
	{CreateEndpointRequest{}, "CreateEndpointRequest", false},
	{Endpoint{}, "Endpoint", true},
	{EndpointList{}, "EndpointList", true},
	{EndpointStateRequest{}, "EndpointStateRequest", false},
	{RotateSecretRequest{}, "RotateSecretRequest", false},
	{Delivery{}, "Delivery", true},
	{DeliveryList{}, "DeliveryList", true},
	{ReplayRequest{}, "ReplayRequest", false},
	{ReplayAnswer{}, "ReplayAnswer", true},
	{ResolveExceptionRequest{}, "ResolveExceptionRequest", false},
	{ExceptionResolution{}, "ExceptionResolution", true},
	{KeyRef{}, "KeyRef", true},
	{AuditEntry{}, "AuditEntry", true},
	{AuditLog{}, "AuditLog", true},
}

// notBodies are the schemas of the document that no struct here declares,
// with why.
var notBodies = map[string]string{
	"ProviderEvent":      "the provider's event, whose format the provider contract owns (docs/provider-http.md)",
	"EndpointWithSecret": "Endpoint with its secret required, for the answers that show it",
}

// schema is the part of a JSON Schema that the drift check reads.
type schema struct {
	Type                 any                `json:"type"`
	Ref                  string             `json:"$ref"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties any                `json:"additionalProperties"`
	Enum                 []any              `json:"enum"`
}

// types is the schema's type as a list: "string", or ["string", "null"].
func (s *schema) types() []string {
	switch t := s.Type.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	return nil
}

func documentSchemas(t *testing.T) map[string]*schema {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(docs.OpenAPI, &doc))
	require.NotEmpty(t, doc.Components.Schemas)
	return doc.Components.Schemas
}

var timeType = reflect.TypeFor[time.Time]()

// jsonType is the JSON type that encoding/json writes for a Go type, and
// whether it may write null.
func jsonType(t reflect.Type) (string, bool) {
	nullable := false
	if t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), true
	}
	if t == timeType {
		return "string", nullable
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nullable
	case reflect.Bool:
		return "boolean", nullable
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer", nullable
	case reflect.Float32, reflect.Float64:
		return "number", nullable
	case reflect.Slice, reflect.Array:
		return "array", nullable
	}
	return "object", nullable
}

// drift lists where the struct type body and its schema s disagree: a json
// field that is not a property or a property that is no field, a field
// whose JSON type is not the property's, and, for a response, a field that
// the API always writes but the schema does not require, or one it may
// leave out that the schema requires.
func drift(body reflect.Type, s *schema, response bool) []string {
	var out []string
	if s.AdditionalProperties != false {
		out = append(out, "the schema allows properties it does not declare (additionalProperties is not false)")
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	fields := map[string]bool{}
	for f := range body.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" || f.Anonymous {
			out = append(out, fmt.Sprintf("field %s has no json name of its own", f.Name))
			continue
		}
		fields[name] = true
		omitempty := slices.Contains(strings.Split(opts, ","), "omitempty")
		p, ok := s.Properties[name]
		if !ok {
			out = append(out, fmt.Sprintf("field %q is not a property of the schema", name))
			continue
		}
		if types := p.types(); len(types) > 0 {
			want, nullable := jsonType(f.Type)
			if !slices.Contains(types, want) {
				out = append(out, fmt.Sprintf("field %q is a JSON %s, the schema says %v", name, want, types))
			}
			// An omitempty pointer is left out, never written null; in a
			// request, a pointer tells an absent field from an empty one,
			// and null is no value the API takes.
			if response && nullable && !omitempty && !slices.Contains(types, "null") {
				out = append(out, fmt.Sprintf("field %q may be null, the schema says %v", name, types))
			}
			if !nullable && slices.Contains(types, "null") {
				out = append(out, fmt.Sprintf("field %q is never null, the schema says %v", name, types))
			}
		}
		if response && omitempty && required[name] {
			out = append(out, fmt.Sprintf("field %q is omitempty, so the schema must not require it", name))
		}
		if response && !omitempty && !required[name] {
			out = append(out, fmt.Sprintf("field %q is always written, so the schema must require it", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if !fields[name] {
			out = append(out, fmt.Sprintf("property %q is no json field of %v", name, body))
		}
	}
	for _, name := range s.Required {
		if !fields[name] {
			out = append(out, fmt.Sprintf("required %q is no json field of %v", name, body))
		}
	}
	return out
}

// TestOpenAPI_EveryBodyIsItsSchema keeps the Go bodies and the document
// equal, field by field, so that a field added to either alone fails.
func TestOpenAPI_EveryBodyIsItsSchema(t *testing.T) {
	schemas := documentSchemas(t)
	for _, b := range bodySchemas {
		t.Run(b.schema, func(t *testing.T) {
			s, ok := schemas[b.schema]
			require.True(t, ok, "docs/openapi.json has no schema %s", b.schema)
			require.Empty(t, drift(reflect.TypeOf(b.body), s, b.response))
		})
	}
}

// TestOpenAPI_EveryBodyAndSchemaIsInTheTable keeps bodySchemas whole: a
// struct declared here or a schema in the document that it lacks is not
// checked, so it fails.
func TestOpenAPI_EveryBodyAndSchemaIsInTheTable(t *testing.T) {
	inTable := map[string]bool{}
	schemaInTable := map[string]bool{}
	for _, b := range bodySchemas {
		inTable[reflect.TypeOf(b.body).Name()] = true
		schemaInTable[b.schema] = true
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	var structs []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.StructType); ok && ts.Name.IsExported() {
					structs = append(structs, ts.Name.Name)
				}
			}
			return true
		})
	}
	require.NotEmpty(t, structs)
	for _, name := range structs {
		require.True(t, inTable[name], "wire.%s is not in bodySchemas", name)
	}
	for name := range documentSchemas(t) {
		require.True(t, schemaInTable[name] || notBodies[name] != "", "the schema %s is neither in bodySchemas nor in notBodies", name)
	}
}

// TestOpenAPI_TheProblemTypesAreTheDocuments keeps the Problem schema's
// type and status enums equal to the problem types declared here.
func TestOpenAPI_TheProblemTypesAreTheDocuments(t *testing.T) {
	p := documentSchemas(t)["Problem"]
	require.NotNil(t, p)
	var types []string
	statuses := map[float64]bool{}
	for typ, v := range problemTypes {
		types = append(types, string(typ))
		statuses[float64(v.status)] = true
	}
	var docTypes []string
	for _, v := range p.Properties["type"].Enum {
		docTypes = append(docTypes, fmt.Sprint(v))
	}
	require.ElementsMatch(t, types, docTypes, "the Problem schema's type enum")
	var docStatuses []float64
	for _, v := range p.Properties["status"].Enum {
		docStatuses = append(docStatuses, v.(float64))
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(statuses)), docStatuses, "the Problem schema's status enum")
}

// The check fails on a field added to a body alone, on a property added
// to the document alone, and on the wrong requiredness.
func TestDrift_ReportsEachDisagreement(t *testing.T) {
	health := documentSchemas(t)["Health"]
	require.NotNil(t, health)
	tests := []struct {
		name string
		body any
		want []string
	}{
		{"the body as declared", Health{}, nil},
		{"a field the document lacks", struct {
			Status string `json:"status"`
			Uptime int    `json:"uptime"`
		}{}, []string{`field "uptime" is not a property of the schema`}},
		{"a property the body lacks", struct{}{}, []string{`property "status" is no json field of struct {}`, `required "status" is no json field of struct {}`}},
		{"an omitempty field the document requires", struct {
			Status string `json:"status,omitempty"`
		}{}, []string{`field "status" is omitempty, so the schema must not require it`}},
		{"a field of another type", struct {
			Status int `json:"status"`
		}{}, []string{`field "status" is a JSON integer, the schema says [string]`}},
		{"a field that may be null", struct {
			Status *string `json:"status"`
		}{}, []string{`field "status" may be null, the schema says [string]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, drift(reflect.TypeOf(tt.body), health, true))
		})
	}
	// A request's schema may leave an always-written field optional: its
	// required fields are the API's rules, not the encoder's.
	require.Empty(t, drift(reflect.TypeFor[CreateOrderRequest](), documentSchemas(t)["CreateOrderRequest"], false))
}
