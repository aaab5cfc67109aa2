package strictjson

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// body is a request body with the kinds of fields the service decodes.
type body struct {
	Amount *string `json:"amount"`
	Count  int64   `json:"count"`
	Seed   uint64  `json:"seed"`
	Rate   float64 `json:"rate"`
	Data   *struct {
		ID string `json:"id"`
	} `json:"data"`
}

func TestUnmarshal_RefusesWhatCouldMeanTwoThings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Error
	}{
		{"case-variant name", `{"amount":"1.00","AMOUNT":"1000.00"}`, Error{Field: "AMOUNT", Problem: problemUnknown}},
		{"name folded by Unicode", `{"deſcription":"x"}`, Error{Field: "deſcription", Problem: problemUnknown}},
		{"duplicate name", `{"amount":"1.00","amount":"1000.00"}`, Error{Field: "amount", Problem: "appears more than once"}},
		{"nested duplicate", `{"data":{"id":"a","id":"b"}}`, Error{Field: "data.id", Problem: "appears more than once"}},
		{"unknown name", `{"tip":"5"}`, Error{Field: "tip", Problem: problemUnknown}},
		{"nested unknown name", `{"data":{"id":"a","x":1}}`, Error{Field: "data.x", Problem: problemUnknown}},
		{"invalid UTF-8 in a value", "{\"amount\":\"1\xff\"}", Error{Problem: "the body is not valid UTF-8 at byte 12"}},
		{"invalid UTF-8 in a name", "{\"\xc3\":1}", Error{Problem: "the body is not valid UTF-8 at byte 2"}},
		{"number for a string", `{"amount":1.00}`, Error{Field: "amount", Problem: "must be a JSON string"}},
		{"fraction for an integer", `{"count":1.5}`, Error{Field: "count", Problem: "must be a JSON integer that fits in 64 bits"}},
		{"integer over int64", `{"count":9223372036854775808}`, Error{Field: "count", Problem: "must be a JSON integer that fits in 64 bits"}},
		{"negative for unsigned", `{"seed":-1}`, Error{Field: "seed", Problem: "must be a non-negative JSON integer that fits in 64 bits"}},
		{"string for a number", `{"rate":"0.5"}`, Error{Field: "rate", Problem: "must be a JSON number"}},
		{"array for an object", `{"data":[]}`, Error{Field: "data", Problem: "must be a JSON object"}},
		{"empty", " \n", Error{Problem: "the body is empty; a JSON object is required"}},
		{"array", `["1.00"]`, Error{Problem: "the body must be a JSON object"}},
		{"null", `null`, Error{Problem: "the body must be a JSON object"}},
		{"form post", `amount=1`, Error{Problem: "the body must be a JSON object"}},
		{"truncated", `{"amount":"1.00"`, Error{Problem: "the body is truncated JSON"}},
		{"syntax", `{amount:1}`, Error{Problem: "the body is not valid JSON at byte 1"}},
		{"second object", `{"count":1}{}`, Error{Problem: "the body must hold a single JSON object and nothing after it"}},
		{"trailing text", `{"count":1} x`, Error{Problem: "the body must hold a single JSON object and nothing after it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got body
			err := Unmarshal([]byte(tt.in), &got)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.want, *e)
		})
	}
}

func TestUnmarshalExtensible_SkipsUnknownNamesOnly(t *testing.T) {
	var got body
	require.NoError(t, UnmarshalExtensible([]byte(`{"count":1,"COUNT":2,"data":{"id":"a","object":"charge"}}`), &got))
	require.Equal(t, int64(1), got.Count)
	require.Equal(t, "a", got.Data.ID)

	err := UnmarshalExtensible([]byte(`{"count":1,"count":2}`), &got)
	require.EqualError(t, err, `field "count" appears more than once`)
	err = UnmarshalExtensible([]byte("{\"x\":\"\xff\"}"), &got)
	require.EqualError(t, err, "the body is not valid UTF-8 at byte 6")
}

func TestError_ReadsAsASentence(t *testing.T) {
	require.Equal(t, `unknown field "AMOUNT"`, (&Error{Field: "AMOUNT", Problem: problemUnknown}).Error())
	require.Equal(t, `field "data.id" must be a JSON string`, (&Error{Field: "data.id", Problem: "must be a JSON string"}).Error())
	require.Equal(t, "the body is truncated JSON", (&Error{Problem: "the body is truncated JSON"}).Error())
}

func TestUnmarshal_AcceptsExactNames(t *testing.T) {
	var got body
	require.NoError(t, Unmarshal([]byte(" {\"amount\":\"548.90\",\"count\":3,\"seed\":7,\"rate\":0.5,\"data\":{\"id\":\"ch_1\"}}\n"), &got))
	require.Equal(t, "548.90", *got.Amount)
	require.Equal(t, int64(3), got.Count)
	require.Equal(t, "ch_1", got.Data.ID)
}

// chaos is a type with its own UnmarshalJSON that uses this package, as the
// fake provider's modes do.
type chaos struct{ Delay string }

func (c *chaos) UnmarshalJSON(b []byte) error {
	var w struct {
		Delay string `json:"delay"`
	}
	if err := Unmarshal(b, &w); err != nil {
		return err
	}
	c.Delay = w.Delay
	return nil
}

func TestUnmarshal_NestedStrictTypeKeepsItsError(t *testing.T) {
	var got struct {
		Chaos chaos `json:"chaos"`
	}
	err := Unmarshal([]byte(`{"chaos":{"DELAY":"1s"}}`), &got)
	require.EqualError(t, err, `unknown field "DELAY"`)
	require.NoError(t, Unmarshal([]byte(`{"chaos":{"delay":"1s"}}`), &got))
	require.Equal(t, "1s", got.Chaos.Delay)
}

// FuzzUnmarshal holds the package to its promise: whatever it accepts means
// the same to a lenient reader (encoding/json, which folds case and lets the
// last duplicate win), and whatever it refuses, it refuses with an *Error.
func FuzzUnmarshal(f *testing.F) {
	for _, seed := range []string{
		`{"amount":"1.00","AMOUNT":"1000.00"}`, `{"deſcription":"x"}`, `{"amount":"1","amount":"2"}`,
		`{"count":1,"seed":2,"rate":0.5,"data":{"id":"x"}}`, "{\"amount\":\"\xff\"}", `{"data":null}`,
		`{"count":1e2}`, `{"amount":"\u202e"}`, `[]`, `{"count":1}{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var strict body
		err := Unmarshal(in, &strict)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Unmarshal(%q) = %v, not an *Error", in, err)
			}
			return
		}
		var lenient body
		if err := stdjson.Unmarshal(in, &lenient); err != nil {
			t.Fatalf("Unmarshal(%q) accepted what encoding/json refuses: %v", in, err)
		}
		s, _ := stdjson.Marshal(strict)
		l, _ := stdjson.Marshal(lenient)
		if !bytes.Equal(s, l) {
			t.Fatalf("Unmarshal(%q) = %s, but encoding/json reads %s", in, s, l)
		}
	})
}

// createOrder is the body of POST /api/orders, for the benchmarks.
var createOrder = []byte(`{"amount": "548.90", "currency": "TRY", "description": "Bookstore order"}`)

type createOrderBody struct {
	Amount      *string `json:"amount"`
	Currency    *string `json:"currency"`
	Description string  `json:"description"`
}

// BenchmarkUnmarshal measures the strict reading of an order's body, and
// BenchmarkUnmarshalEncodingJSON the lenient one it replaced.
func BenchmarkUnmarshal(b *testing.B) {
	for b.Loop() {
		var v createOrderBody
		if err := Unmarshal(createOrder, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalEncodingJSON(b *testing.B) {
	for b.Loop() {
		dec := stdjson.NewDecoder(bytes.NewReader(createOrder))
		dec.DisallowUnknownFields()
		var v createOrderBody
		if err := dec.Decode(&v); err != nil {
			b.Fatal(err)
		}
	}
}
