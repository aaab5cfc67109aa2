package fakeprovider

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider/settlement"
)

func TestSettlementReport_ACaptureIsAChargeLineOnItsDayAndAnAuthorizationNone(t *testing.T) {
	f := newFixture(t, Config{Fee: DefaultFee, HoldWindow: 72 * time.Hour})
	toCapture, toVoid, toExpire := authorize(t, f, 10000), authorize(t, f, 2000), authorize(t, f, 3000)
	require.Equal(t, http.StatusOK, f.do(t, voidCall("v1", toVoid.ID, "")).status)
	require.Empty(t, readReport(t, f, reportDay), "an authorization and a void move no money")
	f.clock.Advance(25 * time.Hour)

	require.Equal(t, http.StatusOK, f.do(t, captureCall("c1", toCapture.ID, captureBodyOf(6000))).status)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("r1", refundBody(toCapture.ID, 1000, "ref-r1"))).status)
	f.clock.Advance(72 * time.Hour)

	require.Empty(t, readReport(t, f, reportDay))
	day2 := readReport(t, f, "2026-12-01")
	require.Len(t, day2, 2)
	require.Equal(t, settlement.Line{
		No: 2, BalanceTransactionID: "txn_000001", Created: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC),
		ChargeID: toCapture.ID, MerchantReference: toCapture.MerchantReference, Category: settlement.CategoryCharge,
		Gross: 6000, Fee: DefaultFee.Fee(6000), Net: 6000 - DefaultFee.Fee(6000), Currency: "TRY",
	}, day2[0], "the capture, of the amount captured")
	require.Equal(t, int64(-1000), day2[1].Gross)
	require.Equal(t, ChargeExpired, f.p.Charges()[2].Status)
	require.Empty(t, readReport(t, f, "2026-12-03"), "an expiry moves no money")
	require.Empty(t, readReport(t, f, "2026-12-04"))
	require.Equal(t, toExpire.ID, f.p.Charges()[2].ID)
}

func TestAlterSettlement_NamesACaptureByItsChargeOnTheDayOfTheCapture(t *testing.T) {
	f := newFixture(t, Config{})
	hold := authorize(t, f, 1000)
	require.Error(t, f.p.Alter(Alteration{Date: reportDay, ChargeID: hold.ID, Action: AlterDrop}), "an authorization has no line")
	f.clock.Advance(24 * time.Hour)
	require.Equal(t, http.StatusOK, f.do(t, captureCall("c1", hold.ID, captureBodyOf(1000))).status)

	require.Error(t, f.p.Alter(Alteration{Date: reportDay, ChargeID: hold.ID, Action: AlterDrop}))
	require.NoError(t, f.p.Alter(Alteration{Date: "2026-12-01", ChargeID: hold.ID, Action: AlterDuplicate}))

	require.Len(t, readReport(t, f, "2026-12-01"), 2)
}
