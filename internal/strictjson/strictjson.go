// Package strictjson reads JSON so that a body means exactly one thing to
// every reader of it: to this service, to a proxy and to a log alike.
//
// encoding/json matches member names case-insensitively (so "AMOUNT" and
// "deſcription", with U+017F, fill "amount" and "description"), lets the last
// of two duplicate members win, and turns invalid UTF-8 into U+FFFD. Here a
// name matches its field exactly, and a duplicate member, an unknown member,
// invalid UTF-8 and anything after the value are errors. It serves the
// checkout API, the provider's events and the fake provider's bodies.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error is a body that was refused, explained for the client that sent it.
type Error struct {
	// Field names the member at fault, with a dot between the names of
	// nested members ("data.id"); empty when the fault is the body's.
	Field string
	// Problem says what is wrong: with Field, a predicate such as "must be a
	// JSON string"; without, a whole sentence about the body.
	Problem string
}

// Error reads as a sentence for a problem's detail, such as
// `field "amount" must be a JSON string` or `unknown field "AMOUNT"`.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Problem
	}
	if e.Problem == problemUnknown {
		return fmt.Sprintf("unknown field %q", e.Field)
	}
	return fmt.Sprintf("field %q %s", e.Field, e.Problem)
}

// problemUnknown is the Problem of a member that no field takes.
const problemUnknown = "is not a field of this body"

// exact are the rules of every reading. Exact names, refused duplicates and
// refused invalid UTF-8 are the defaults of this package's json; they are
// spelled out so that no change of default loosens them.
var exact = json.JoinOptions(
	json.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

var (
	closed     = json.JoinOptions(exact, json.RejectUnknownMembers(true))
	extensible = json.JoinOptions(exact, json.RejectUnknownMembers(false))
)

// Unmarshal decodes data, which must be one JSON object and nothing after
// it, into dst, and refuses a member that dst has no field for. Every error
// it returns is an *Error, but for an error of dst's own UnmarshalJSON that
// is not one, which is returned as it is.
func Unmarshal(data []byte, dst any) error {
	return unmarshal(data, dst, closed)
}

// UnmarshalExtensible is Unmarshal for a document that its sender extends
// over time, such as a provider's signed event: a member that dst has no
// field for is skipped. Names still match exactly ("TYPE" is skipped, never
// read as "type"), and a duplicate or invalid UTF-8 is still refused.
func UnmarshalExtensible(data []byte, dst any) error {
	return unmarshal(data, dst, extensible)
}

func unmarshal(data []byte, dst any, options json.Options) error {
	if firstNonSpace(data) == len(data) {
		return &Error{Problem: "the body is empty; a JSON object is required"}
	}
	// Checked before decoding so that the offset is the first bad byte's,
	// wherever it is, and no decoder ever repairs it.
	if !utf8.Valid(data) {
		return &Error{Problem: fmt.Sprintf("the body is not valid UTF-8 at byte %d", firstInvalidUTF8(data))}
	}
	if data[firstNonSpace(data)] != '{' {
		return &Error{Problem: "the body must be a JSON object"}
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data), options)
	if err := json.UnmarshalDecode(dec, dst); err != nil {
		return explain(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return &Error{Problem: "the body must hold a single JSON object and nothing after it"}
	}
	return nil
}

// firstNonSpace returns the offset of the first byte of data that is not
// JSON whitespace.
func firstNonSpace(data []byte) int {
	return len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
}

// explain turns an error of json.Unmarshal into an *Error.
func explain(err error) error {
	var (
		own     *Error
		semErr  *json.SemanticError
		syntErr *jsontext.SyntacticError
	)
	switch {
	case errors.As(err, &own):
		// A nested type's UnmarshalJSON used this package; its member names
		// are relative to it, and the outer ones are not known here.
		return own
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Problem: "the body is truncated JSON"}
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syntErr):
		return &Error{Field: fieldName(syntErr.JSONPointer), Problem: "appears more than once"}
	case errors.As(err, &syntErr):
		return &Error{Problem: fmt.Sprintf("the body is not valid JSON at byte %d", syntErr.ByteOffset)}
	case errors.As(err, &semErr) && errors.Is(semErr.Err, json.ErrUnknownName):
		return &Error{Field: fieldName(semErr.JSONPointer), Problem: problemUnknown}
	case errors.As(err, &semErr) && semErr.Err == nil:
		return &Error{Field: fieldName(semErr.JSONPointer), Problem: "must be " + kindOf(semErr.GoType)}
	case errors.As(err, &semErr) && isNumberRange(semErr):
		return &Error{Field: fieldName(semErr.JSONPointer), Problem: "must be " + kindOf(semErr.GoType)}
	case errors.As(err, &semErr) && semErr.JSONPointer != "":
		// An error of a type's own UnmarshalJSON, written for people.
		return &Error{Field: fieldName(semErr.JSONPointer), Problem: "is invalid: " + semErr.Err.Error()}
	case errors.As(err, &semErr):
		return semErr.Err
	}
	return &Error{Problem: "the body is not valid JSON"}
}

// isNumberRange reports a number that does not fit its Go type, such as
// 548.9 or 2^63 for an int64: the same mistake as a value of the wrong kind.
func isNumberRange(e *json.SemanticError) bool {
	var numErr *strconv.NumError
	return errors.As(e.Err, &numErr) || e.JSONKind == '0'
}

// fieldName renders a JSON pointer such as "/data/id" as "data.id".
func fieldName(p jsontext.Pointer) string {
	var names []string
	for name := range p.Tokens() {
		names = append(names, name)
	}
	return strings.Join(names, ".")
}

// kindOf names the JSON value that a Go type takes, for an error's Problem.
func kindOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a JSON value of another kind"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a JSON integer that fits in " + strconv.Itoa(t.Bits()) + " bits"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative JSON integer that fits in " + strconv.Itoa(t.Bits()) + " bits"
	case reflect.Float32, reflect.Float64:
		return "a JSON number"
	case reflect.Bool:
		return "a JSON boolean"
	case reflect.String:
		return "a JSON string"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	default:
		return "a JSON object"
	}
}

// firstInvalidUTF8 returns the offset of the first byte of data that does not
// begin a valid UTF-8 sequence.
func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(data)
}
