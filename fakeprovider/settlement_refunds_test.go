package fakeprovider

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider/settlement"
)

func TestSettlementReport_ARefundIsANegativeLineOnTheDateItSucceeded(t *testing.T) {
	f := newFixture(t, Config{Fee: DefaultFee})
	charge := f.charge(t, "k1", 54890, "tok_visa")
	f.clock.Advance(time.Hour)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("r1", refundBody(charge, 1250, "shop-refund-1"))).status)
	f.p.HoldRefunds(true)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("r2", refundBody(charge, 2000, "shop-refund-2"))).status)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("r3", refundBody(charge, 3000, "shop-refund-3"))).status)
	f.do(t, postRefundCall("r4", refundBody(charge, 99999, "shop-refund-4")))
	f.clock.Advance(24 * time.Hour)
	_, err := f.p.SettleRefund("re_000002", RefundSucceeded, "")
	require.NoError(t, err)
	_, err = f.p.SettleRefund("re_000003", RefundFailed, "declined")
	require.NoError(t, err)

	day1 := readReport(t, f, reportDay)
	day2 := readReport(t, f, "2026-12-01")

	require.Len(t, day1, 2, "the charge and the refund that succeeded; not the pending, the failed or the refused ones")
	require.Equal(t, settlement.Line{
		No: 3, BalanceTransactionID: "txn_re_000001", Created: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC),
		ChargeID: charge, MerchantReference: "shop-refund-1", Category: settlement.CategoryRefund,
		Gross: -1250, Fee: 0, Net: -1250, Currency: "TRY", RefundID: "re_000001",
	}, day1[1])
	require.Empty(t, day1[0].RefundID)
	require.Len(t, day2, 1, "a refund held pending is reported on the date it succeeded")
	require.Equal(t, "re_000002", day2[0].RefundID)
	require.Equal(t, int64(-2000), day2[0].Net)
}

func TestSettlementReport_ARefundThatFailsAfterSuccessIsReversedOnTheDateItFailed(t *testing.T) {
	f := newFixture(t, Config{})
	charge := f.charge(t, "k1", 1000, "tok_visa")
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("r1", refundBody(charge, 400, "shop-refund-1"))).status)
	f.clock.Advance(48 * time.Hour)

	_, err := f.p.SettleRefund("re_000001", RefundFailed, "expired_or_canceled_card")
	require.NoError(t, err)

	require.Len(t, readReport(t, f, reportDay), 2, "the refund stays in the report of the day it succeeded")
	require.Empty(t, readReport(t, f, "2026-12-01"))
	failure := readReport(t, f, "2026-12-02")
	require.Equal(t, []settlement.Line{{
		No: 2, BalanceTransactionID: "txn_re_000001_failure", Created: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
		ChargeID: charge, MerchantReference: "shop-refund-1", Category: settlement.CategoryRefundFailure,
		Gross: 400, Fee: 0, Net: 400, Currency: "TRY", RefundID: "re_000001",
	}}, failure)
}

func TestSettlementReport_RefundLinesCanBeAltered(t *testing.T) {
	f := newFixture(t, Config{})
	charge := f.charge(t, "k1", 1000, "tok_visa")
	for _, key := range []string{"r1", "r2", "r3"} {
		require.Equal(t, http.StatusCreated, f.do(t, postRefundCall(key, refundBody(charge, 100, "ref-"+key))).status)
	}
	alter := func(body string) reply {
		return f.do(t, call{method: http.MethodPost, path: "/_admin/settlements", body: body})
	}

	require.Equal(t, http.StatusOK, alter(`{"date":"2026-11-30","refund_id":"re_000001","action":"drop"}`).status)
	require.Equal(t, http.StatusOK, alter(`{"date":"2026-11-30","refund_id":"re_000002","action":"duplicate"}`).status)
	require.Equal(t, http.StatusOK, alter(`{"date":"2026-11-30","refund_id":"re_000003","action":"change","gross":"-2.00"}`).status)
	both := alter(`{"date":"2026-11-30","charge_id":"ch_000001","refund_id":"re_000001","action":"drop"}`)
	unknown := alter(`{"date":"2026-11-30","refund_id":"re_000009","action":"drop"}`)
	otherDay := alter(`{"date":"2026-12-01","refund_id":"re_000001","action":"drop"}`)

	lines := readReport(t, f, reportDay)
	var refunds []string
	for _, l := range lines[1:] {
		refunds = append(refunds, l.RefundID)
	}
	require.Equal(t, []string{"re_000002", "re_000002", "re_000003"}, refunds)
	require.Equal(t, int64(-200), lines[3].Gross)
	require.Equal(t, int64(-200), lines[3].Net)
	require.Equal(t, "refund_id", decode[problem](t, both).Param)
	require.Equal(t, msgAlterationNoRefund, requireProblem(t, unknown, http.StatusBadRequest, msgAlterationNoRefund).Detail)
	requireProblem(t, otherDay, http.StatusBadRequest, msgAlterationNoRefund)
}
