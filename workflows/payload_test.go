package workflows_test

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/store"
	"chargeonce/workflows"
)

// Every value that crosses Temporal, as the input or result of a workflow or
// an activity, the argument or answer of an update, a signal or a query, or
// a schedule's argument, is written into histories and schedules that
// outlive the code that wrote it. Its fields carry explicit JSON names, so
// that renaming a Go field renames nothing there, and this test holds every
// name: it encodes a value with every field set, as Temporal's data
// converter does, and compares the JSON. A field renamed, retagged, dropped
// or added fails it.
func TestPayloads_KeepTheirJSONNames(t *testing.T) {
	at := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	amount := chargeonce.Money{Minor: 54890, Currency: "TRY"}
	intent := chargeonce.PaymentIntent{
		Key: "01a1d96c-e23d-77bf-801e-9df969c1d378", OrderID: 1001, Amount: amount, CardToken: "tok_visa",
		CardHash: "hash", CardHashKeyed: true, MerchantReference: "shop-1001-01a1d96ce23d77bf801e9df969c1d378", Description: "order 1001", CreatedAt: at,
		Provider: "eu", Capture: chargeonce.CaptureManual, OnDeadline: chargeonce.DeadlineCapture,
	}
	const intentJSON = `{"key": "01a1d96c-e23d-77bf-801e-9df969c1d378", "orderId": 1001, "amount": {"minor": 54890, "currency": "TRY"},
		"cardToken": "tok_visa", "cardHash": "hash", "cardHashKeyed": true, "merchantReference": "shop-1001-01a1d96ce23d77bf801e9df969c1d378",
		"description": "order 1001", "createdAt": "2026-03-14T10:00:00Z", "provider": "eu", "capture": "manual", "onDeadline": "capture"}`
	moveIntent := chargeonce.MoveIntent{
		Key: "01a1d96c-e23d-77bf-801e-9df969c1d37a", Kind: chargeonce.MoveCapture, OrderID: 1001, AttemptKey: intent.Key, ChargeID: "ch_1",
		Amount: amount, MerchantReference: "shop-capture-01a1d96ce23d77bf801e9df969c1d37a", Origin: chargeonce.MoveByDeadline, CreatedAt: at,
		Provider: "eu",
	}
	const moveIntentJSON = `{"key": "01a1d96c-e23d-77bf-801e-9df969c1d37a", "kind": "capture", "orderId": 1001,
		"attemptKey": "01a1d96c-e23d-77bf-801e-9df969c1d378", "chargeId": "ch_1", "amount": {"minor": 54890, "currency": "TRY"},
		"merchantReference": "shop-capture-01a1d96ce23d77bf801e9df969c1d37a", "origin": "deadline", "createdAt": "2026-03-14T10:00:00Z", "provider": "eu"}`
	terms := &activities.HoldTerms{CaptureBefore: at.Add(time.Hour), Deadline: at}
	const termsJSON = `{"CaptureBefore": "2026-03-14T11:00:00Z", "Deadline": "2026-03-14T10:00:00Z"}`
	refundIntent := chargeonce.RefundIntent{
		Key: "01a1d96c-e23d-77bf-801e-9df969c1d379", OrderID: 1001, ChargeID: "ch_1", Amount: amount, Reason: "damaged",
		MerchantReference: "shop-refund-01a1d96ce23d77bf801e9df969c1d379", Origin: chargeonce.RefundByMerchant, CreatedAt: at,
		Provider: "eu",
	}
	const refundIntentJSON = `{"key": "01a1d96c-e23d-77bf-801e-9df969c1d379", "orderId": 1001, "chargeId": "ch_1",
		"amount": {"minor": 54890, "currency": "TRY"}, "reason": "damaged", "merchantReference": "shop-refund-01a1d96ce23d77bf801e9df969c1d379",
		"origin": "merchant", "createdAt": "2026-03-14T10:00:00Z", "provider": "eu"}`
	byKind := map[chargeonce.ExceptionKind]int{chargeonce.ExceptionUnknownCharge: 1}
	totals := []store.SettlementTotal{{Currency: "TRY", Lines: 3, Gross: 300, Fee: 9, Net: 291}}
	const totalsJSON = `[{"currency": "TRY", "lines": 3, "gross": 300, "fee": 9, "net": 291}]`

	tests := []struct {
		name  string
		value any
		want  string
	}{
		// PaymentWorkflow: its input, also across continue-as-new, and its
		// result, which the charge update answers too.
		{"PaymentInput", workflows.PaymentInput{
			Intent:   intent,
			Timing:   workflows.Timing{AttemptTimeout: 1, SendBudget: 2, RetryInterval: 3, MinAge: 4, Interval: 5, AbandonAfter: 6, HoldMargin: 7, HoldWarning: 8},
			Carried:  &workflows.CarriedState{Checks: 7, LastError: "timeout", CardToken: "tok_visa"},
			FailOver: true,
		}, `{"intent": ` + intentJSON + `,
			"timing": {"attemptTimeout": 1, "chargeBudget": 2, "retryInterval": 3, "minAge": 4, "interval": 5, "abandonAfter": 6, "holdMargin": 7, "holdWarning": 8},
			"carried": {"checks": 7, "lastError": "timeout", "cardToken": "tok_visa"}, "failOver": true}`},
		{"PaymentResult", workflows.PaymentResult{Status: chargeonce.AttemptDeclined, ProviderPaymentID: "ch_1", DeclineCode: "card_declined", ProviderTrouble: true, Message: "declined",
			Hold: &workflows.HoldResult{Status: chargeonce.HoldCaptured, Deadline: at, CaptureBefore: at.Add(time.Hour), Captured: 100}},
			`{"status": "declined", "providerPaymentId": "ch_1", "declineCode": "card_declined", "providerTrouble": true, "message": "declined",
			"hold": {"status": "captured", "deadline": "2026-03-14T10:00:00Z", "captureBefore": "2026-03-14T11:00:00Z", "captured": 100}}`},
		{"ChargeRequest", workflows.ChargeRequest{CardToken: "tok_visa", CardHash: "hash"}, `{"cardToken": "tok_visa", "cardHash": "hash"}`},
		{"ProviderEvent", workflows.ProviderEvent{ChargeID: "ch_1"}, `{"chargeId": "ch_1"}`},
		{"Status", workflows.Status{Phase: workflows.PhaseReconciling, NextCheckAt: at, Checks: 2, LastError: "timeout", HoldDeadline: at},
			`{"phase": "reconciling", "nextCheckAt": "2026-03-14T10:00:00Z", "checks": 2, "lastError": "timeout", "holdDeadline": "2026-03-14T10:00:00Z"}`},
		{"HoldMoved", activities.HoldMoved{Key: moveIntent.Key, Status: chargeonce.MoveSucceeded, Hold: chargeonce.HoldCaptured, Captured: 100},
			`{"key": "01a1d96c-e23d-77bf-801e-9df969c1d37a", "status": "succeeded", "hold": "captured", "captured": 100}`},

		// CaptureWorkflow and VoidWorkflow: their input, their result,
		// which the move update answers too, and the update's argument.
		{"MoveInput", workflows.MoveInput{Intent: moveIntent, Timing: workflows.Timing{AttemptTimeout: 1, SendBudget: 2, RetryInterval: 3, MinAge: 4, Interval: 5,
			AbandonAfter: 6, HoldMargin: 7, HoldWarning: 8}, Carried: &workflows.MoveCarried{Checks: 2, LastError: "timeout", SentBy: at}},
			`{"intent": ` + moveIntentJSON + `, "timing": {"attemptTimeout": 1, "chargeBudget": 2, "retryInterval": 3, "minAge": 4, "interval": 5,
			"abandonAfter": 6, "holdMargin": 7, "holdWarning": 8}, "carried": {"checks": 2, "lastError": "timeout", "sentBy": "2026-03-14T10:00:00Z"}}`},
		{"MoveResult", workflows.MoveResult{Status: chargeonce.MoveDeclined, DeclineCode: "hold_expired", Hold: chargeonce.HoldExpired, Captured: 1, Message: "expired"},
			`{"status": "declined", "declineCode": "hold_expired", "hold": "expired", "captured": 1, "message": "expired"}`},
		{"MoveUpdate", workflows.MoveUpdate{Key: moveIntent.Key}, `{"key": "01a1d96c-e23d-77bf-801e-9df969c1d37a"}`},

		// The payment's activities.
		{"ChargeInput", activities.ChargeInput{Intent: intent, Settle: true, HoldMargin: 7}, `{"Intent": ` + intentJSON + `, "Settle": true, "HoldMargin": 7}`},
		{"ChargeResult", activities.ChargeResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: "ch_1", DeclineCode: "none", ProviderTrouble: true, Replayed: true, Recorded: true, Hold: terms},
			`{"Status": "succeeded", "ProviderPaymentID": "ch_1", "DeclineCode": "none", "ProviderTrouble": true, "Replayed": true, "Recorded": true, "Hold": ` + termsJSON + `}`},
		{"FindChargeInput", activities.FindChargeInput{Key: intent.Key, MerchantReference: intent.MerchantReference, Amount: amount, Provider: "eu", Hold: true, HoldMargin: 7},
			`{"Key": "01a1d96c-e23d-77bf-801e-9df969c1d378", "MerchantReference": "shop-1001-01a1d96ce23d77bf801e9df969c1d378",
			"Amount": {"minor": 54890, "currency": "TRY"}, "Provider": "eu", "Hold": true, "HoldMargin": 7}`},
		{"FindChargeResult", activities.FindChargeResult{Found: activities.FoundSucceeded, ProviderPaymentID: "ch_1", Hold: terms},
			`{"Found": "succeeded", "ProviderPaymentID": "ch_1", "Hold": ` + termsJSON + `}`},
		{"RecordOutcomeInput", activities.RecordOutcomeInput{Key: intent.Key, Status: chargeonce.AttemptSucceeded, ProviderPaymentID: "ch_1", Hold: terms},
			`{"Key": "01a1d96c-e23d-77bf-801e-9df969c1d378", "Status": "succeeded", "ProviderPaymentID": "ch_1", "Hold": ` + termsJSON + `}`},
		{"RecordOutcomeResult", activities.RecordOutcomeResult{Changed: true}, `{"Changed": true}`},

		// The refund's activities that reach the provider, by the name of
		// the one the refund is sent to.
		{"RefundInput", activities.RefundInput{Intent: refundIntent}, `{"Intent": ` + refundIntentJSON + `}`},
		{"FindRefundInput", activities.FindRefundInput{Key: refundIntent.Key, ChargeID: "ch_1", MerchantReference: refundIntent.MerchantReference,
			Amount: amount, Provider: "eu"},
			`{"Key": "01a1d96c-e23d-77bf-801e-9df969c1d379", "ChargeID": "ch_1", "MerchantReference": "shop-refund-01a1d96ce23d77bf801e9df969c1d379",
			"Amount": {"minor": 54890, "currency": "TRY"}, "Provider": "eu"}`},
		{"KeyRetentionInput", activities.KeyRetentionInput{Provider: "eu"}, `{"Provider": "eu"}`},

		// The activities of holds and their moves.
		{"MoveActivityInput", activities.MoveInput{Intent: moveIntent}, `{"Intent": ` + moveIntentJSON + `}`},
		{"MoveAnswer", activities.MoveAnswer{Status: chargeonce.MoveSucceeded, DeclineCode: "none", Hold: chargeonce.HoldCaptured, Captured: 100, Replayed: true},
			`{"Status": "succeeded", "DeclineCode": "none", "Hold": "captured", "Captured": 100, "Replayed": true}`},
		{"FindHoldInput", activities.FindHoldInput{Key: moveIntent.Key, ChargeID: "ch_1", Provider: "eu", Operation: chargeonce.OperationVoid},
			`{"Key": "01a1d96c-e23d-77bf-801e-9df969c1d37a", "ChargeID": "ch_1", "Provider": "eu", "Operation": "void"}`},
		{"FindHoldResult", activities.FindHoldResult{Hold: chargeonce.HoldCaptured, Captured: 100}, `{"Hold": "captured", "Captured": 100}`},
		{"RecordMoveInput", activities.RecordMoveInput{Key: moveIntent.Key, AttemptKey: intent.Key, Status: chargeonce.MoveDeclined, DeclineCode: "hold_voided",
			Hold: chargeonce.HoldVoided, Captured: 1},
			`{"Key": "01a1d96c-e23d-77bf-801e-9df969c1d37a", "AttemptKey": "01a1d96c-e23d-77bf-801e-9df969c1d378", "Status": "declined",
			"DeclineCode": "hold_voided", "Hold": "voided", "Captured": 1}`},
		{"EndHoldInput", activities.EndHoldInput{AttemptKey: intent.Key, Hold: chargeonce.HoldCaptured, Captured: 100},
			`{"AttemptKey": "01a1d96c-e23d-77bf-801e-9df969c1d378", "Hold": "captured", "Captured": 100}`},
		{"DeadlineMoveInput", activities.DeadlineMoveInput{AttemptKey: intent.Key, OrderID: 1001, Kind: chargeonce.MoveVoid, ReferencePrefix: "shop"},
			`{"AttemptKey": "01a1d96c-e23d-77bf-801e-9df969c1d378", "OrderID": 1001, "Kind": "void", "ReferencePrefix": "shop"}`},
		{"DeadlineMove", activities.DeadlineMove{Move: &moveIntent, Created: true, Started: true, Hold: chargeonce.HoldVoided, Captured: 1},
			`{"Move": ` + moveIntentJSON + `, "Created": true, "Started": true, "Hold": "voided", "Captured": 1}`},

		// The settlement: the daily schedule's argument, the workflows and
		// their activities.
		{"DailySettlementInput", workflows.DailySettlementInput{Provider: "eu", GraceDays: 2}, `{"Provider": "eu", "GraceDays": 2}`},
		{"DailySettlementResult", workflows.DailySettlementResult{Dates: []string{"2026-03-14"}}, `{"Dates": ["2026-03-14"]}`},
		{"SettlementInput", workflows.SettlementInput{Provider: "eu", Date: "2026-03-14"}, `{"Provider": "eu", "Date": "2026-03-14"}`},
		{"SettlementResult", workflows.SettlementResult{Provider: "eu", Date: "2026-03-14", Status: store.SettlementFinal, Lines: 3, Matched: 2,
			Awaiting: 1, Exceptions: 1, ByKind: byKind, Totals: totals},
			`{"Provider": "eu", "Date": "2026-03-14", "Status": "final", "Lines": 3, "Matched": 2, "Awaiting": 1, "Exceptions": 1,
			"ByKind": {"unknown_charge": 1}, "Totals": ` + totalsJSON + `}`},
		{"GracePeriodResult", activities.GracePeriodResult{Days: 2}, `{"Days": 2}`},
		{"StageReportInput", activities.StageReportInput{Provider: "eu", Date: "2026-03-14"}, `{"Provider": "eu", "Date": "2026-03-14"}`},
		{"StageReportResult", activities.StageReportResult{Lines: 3, Malformed: 1}, `{"Lines": 3, "Malformed": 1}`},
		{"MatchReportInput", activities.MatchReportInput{Provider: "eu", Date: "2026-03-14", RunID: "run-1"}, `{"Provider": "eu", "Date": "2026-03-14", "RunID": "run-1"}`},
		{"MatchReportResult", activities.MatchReportResult{Status: store.SettlementFinal, Lines: 3, Matched: 2, Awaiting: 1,
			Exceptions: 1, ByKind: byKind, Totals: totals},
			`{"Status": "final", "Lines": 3, "Matched": 2, "Awaiting": 1, "Exceptions": 1,
			"ByKind": {"unknown_charge": 1}, "Totals": ` + totalsJSON + `}`},
	}
	dc := converter.GetDefaultDataConverter()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := reflect.ValueOf(tt.value)
			requireExplicitNames(t, v.Type(), tt.name)
			requireEverySet(t, v, tt.name)
			p, err := dc.ToPayload(tt.value)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(p.GetData()))
			back := reflect.New(v.Type())
			require.NoError(t, dc.FromPayload(p, back.Interface()))
			require.Equal(t, tt.value, back.Elem().Interface(), "decodes to what was encoded")
		})
	}
}

// SettlementResult embedded the MatchReportResult until it had fields of
// its own: its JSON is the same, for the runs that closed before.
func TestPayloads_SettlementResultKeepsTheShapeItHadWhenItEmbedded(t *testing.T) {
	m := activities.MatchReportResult{Status: store.SettlementProvisional, Lines: 3, Matched: 2, Awaiting: 1, Exceptions: 1,
		ByKind: map[chargeonce.ExceptionKind]int{chargeonce.ExceptionAmountMismatch: 1},
		Totals: []store.SettlementTotal{{Currency: "TRY", Lines: 3, Gross: 300, Fee: 9, Net: 291}}}
	embedded, err := json.Marshal(struct {
		Date string
		activities.MatchReportResult
	}{"2026-03-14", m})
	require.NoError(t, err)
	own, err := json.Marshal(workflows.SettlementResult{Date: "2026-03-14", Status: m.Status, Lines: m.Lines, Matched: m.Matched,
		Awaiting: m.Awaiting, Exceptions: m.Exceptions, ByKind: m.ByKind, Totals: m.Totals})
	require.NoError(t, err)
	require.JSONEq(t, string(embedded), string(own))
}

// encodesItself reports whether values of typ choose their own JSON, as
// time.Time does: their fields are theirs to keep.
func encodesItself(typ reflect.Type) bool {
	return typ.Implements(reflect.TypeFor[json.Marshaler]()) || typ.Implements(reflect.TypeFor[encoding.TextMarshaler]())
}

// requireExplicitNames fails for a struct field, of typ or of a type it
// holds, whose JSON name is not its tag's but Go's default, the field's name.
func requireExplicitNames(t *testing.T, typ reflect.Type, path string) {
	t.Helper()
	if encodesItself(typ) {
		return
	}
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		requireExplicitNames(t, typ.Elem(), path)
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			require.NotEmpty(t, name, "%s.%s has no explicit JSON name", path, f.Name)
			require.NotEqual(t, "-", name, "%s.%s is not encoded", path, f.Name)
			requireExplicitNames(t, f.Type, path+"."+f.Name)
		}
	}
}

// requireEverySet fails for a field of v, or of a value it holds, that is
// zero: a field omitted when empty would not show its name in the JSON, and
// a field added to a type would go unnoticed.
func requireEverySet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	require.False(t, v.IsZero(), "%s is not set", path)
	if encodesItself(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		requireEverySet(t, v.Elem(), path)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			requireEverySet(t, v.Index(i), path)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			requireEverySet(t, it.Value(), path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				requireEverySet(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	}
}
