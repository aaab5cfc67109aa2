package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/verify/chaos"
	"chargeonce/verify/invariant"
)

// testLog writes each log line to the test's log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestChaos_CISizedRunUnderEveryFaultKeepsEveryPromise(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes minutes")
	}
	_, sum := runChaos(t, 8*time.Minute, func(cfg *chaos.Config) { cfg.Seed, cfg.Backup = 7, true })

	requireEveryPromiseKept(t, sum)
	// The first provider's outages moved payments to the healthy backup,
	// which paid them within their checkouts, and while both were down,
	// checkouts were refused with the promise that nothing was charged,
	// which the checker held.
	require.Positive(t, sum.FailedOver, "checkouts failed over")
	require.Positive(t, sum.PaidAtBackup, "payments at the backup")
	require.Positive(t, sum.Refused, "checkouts refused honestly while both providers were down")
	require.Positive(t, sum.Orders[chargeonce.OrderPaid], "orders paid")

	// The run did what it claims: every planned fault fired, and the
	// customers behaved in every way.
	require.Equal(t, 200, sum.Checkouts)
	require.Equal(t, 3, sum.Faults[chaos.FaultWorkerKill])
	require.Equal(t, 1, sum.Faults[chaos.FaultServerRestart])
	require.Equal(t, 12, sum.Faults[chaos.FaultMode])
	require.Equal(t, 10, sum.Faults[chaos.FaultWebhookChaos])
	require.Equal(t, 8, sum.Faults[chaos.FaultForgedEvent], "every forged event was refused, or Unexpected says so")
	for _, outcome := range []string{fakeprovider.DeliveryDelivered, fakeprovider.DeliveryDropped, fakeprovider.DeliveryDuplicate} {
		require.Positive(t, sum.EventTries[outcome], outcome)
	}
	require.Positive(t, sum.Faults[chaos.FaultLostStart])
	require.Positive(t, sum.Faults[chaos.FaultKeysExpired])
	for _, b := range []string{chaos.BehaviourDoubleClick, chaos.BehaviourRetry, chaos.BehaviourSwitchWhile,
		chaos.BehaviourSwitchAfter, chaos.BehaviourDeclineToken, chaos.BehaviourLateExpired,
		chaos.BehaviourRefundPartial, chaos.BehaviourRefundWhole, chaos.BehaviourRefundRetry,
		chaos.BehaviourManual, chaos.BehaviourCaptureWhole, chaos.BehaviourCapturePartial, chaos.BehaviourVoid,
		chaos.BehaviourMoveRace, chaos.BehaviourHoldLeft} {
		require.Positive(t, sum.Behaviours[b], b)
	}
	// Customers captured and voided their holds under the faults, and the
	// deadlines ended the rest within the run.
	require.Positive(t, sum.Report.Holds[chargeonce.HoldCaptured], "some holds were captured")
	require.Positive(t, sum.Report.Holds[chargeonce.HoldVoided], "some holds were voided")
	require.Zero(t, sum.Report.Holds[chargeonce.HoldAuthorized], "every hold ended by its deadline")
	require.Positive(t, sum.Report.RefundsByStatus[chargeonce.RefundSucceeded], "some refunds succeeded under the faults")
	require.Positive(t, sum.Answers[http.StatusAccepted], "some outcomes were unknown")
	require.Positive(t, sum.Answers[http.StatusConflict], "another card was refused while pending")
	require.Positive(t, sum.Attempts[chargeonce.AttemptAbandoned], "some attempts were abandoned")
	// The lost starts that the sweep alone settled had no card token and
	// settled not_processed; invariant 7 is checked on them after the late
	// retries have waited out the provider's key retention.
	require.Positive(t, sum.Attempts[chargeonce.AttemptNotProcessed], "some attempts were not processed")
	require.Equal(t, sum.Checkouts, sum.Report.Orders)
	require.Equal(t, sum.Report.Workflows, sum.Report.Histories, "every workflow history was read")
	requireLateChargesRepaired(t, sum)
}

// requireLateChargesRepaired fails the test unless late charges were
// planted in both orders of arrival and the repair recorded at least as
// many decisions of each kind: adopted before the customer paid again,
// refunded after. With no violation, each refund left one net charge.
func requireLateChargesRepaired(t *testing.T, sum chaos.Summary) {
	t.Helper()
	before, after := sum.Faults[chaos.FaultLateBeforePaid], sum.Faults[chaos.FaultLateAfterPaid]
	require.Positive(t, before, "late charges planted before the customer paid again")
	require.Positive(t, after, "late charges planted after the order was paid again")
	require.GreaterOrEqual(t, sum.Report.LateCharges[chargeonce.LateChargeAdopted], before, "adopted late charges")
	require.GreaterOrEqual(t, sum.Report.LateCharges[chargeonce.LateChargeRefunded], after, "refunded late charges")
}

// postgresURLEnv names the variable with a PostgreSQL URL whose role may
// create databases; .ci/postgres.sh prints it.
const postgresURLEnv = "CHARGEONCE_TEST_POSTGRES_URL"

func TestChaos_PostgreSQLRestartBreaksNoPromise(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes minutes")
	}
	dsn := os.Getenv(postgresURLEnv)
	if dsn == "" {
		t.Skipf("PostgreSQL chaos run skipped: set %s (run .ci/postgres.sh as root to get one)", postgresURLEnv)
	}
	began := time.Now()
	_, sum := runChaos(t, 6*time.Minute, func(cfg *chaos.Config) {
		cfg.Seed, cfg.DatabaseURL = 11, dsn
		cfg.Checkouts, cfg.WorkerKills, cfg.ServerRestarts, cfg.PostgresRestarts = 80, 1, 0, 1
		cfg.ModeSwitches, cfg.LateRetries = 6, 10
	})

	// The server really went down during the run.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var serverStarted time.Time
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&serverStarted))
	require.True(t, serverStarted.After(began), "PostgreSQL started at %v, before the run began at %v", serverStarted, began)

	requireEveryPromiseKept(t, sum)
	require.Equal(t, 80, sum.Checkouts)
	require.Equal(t, 1, sum.Faults[chaos.FaultPostgres])
	require.Equal(t, 1, sum.Faults[chaos.FaultWorkerKill])
	require.Zero(t, sum.Faults[chaos.FaultServerRestart])
	require.Equal(t, sum.Checkouts, sum.Report.Orders)
	require.Equal(t, sum.Report.Workflows, sum.Report.Histories, "every workflow history was read")
}

func TestChaos_KeyExpiredBeforeALateRetryChargesTwiceWhichIsWhyTheWorkerChecksRetention(t *testing.T) {
	timing := apiTableTiming()
	// The provider finishes the charge a second after the charge phase has
	// given up, so that the checkout answers pending.
	s := startCheckoutStack(t, checkoutStackConfig{Timing: timing, Budget: apiTableBudget,
		Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: timing.SendBudget + time.Second}})
	id := s.createOrder(t, "548.90", "TRY")
	pending := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusAccepted, pending.status, "body: %s", pending.body)
	require.Eventually(t, func() bool { return len(s.provider.Charges()) == 1 }, 15*time.Second, 50*time.Millisecond)
	require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))

	// The provider forgets the key while the attempt is still open, as one
	// whose retention is shorter than the abandon deadline would; then the
	// customer retries with the same card.
	forgotten, err := s.provider.ExpireKeys(0)
	require.NoError(t, err)
	require.Equal(t, 1, forgotten)
	retry := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, retry.status, "body: %s", retry.body)
	var paid paidBody
	require.NoError(t, json.Unmarshal(retry.body, &paid))

	charges := s.provider.Charges()
	require.Len(t, charges, 2, "the same key charged the card twice")
	require.Equal(t, charges[0].IdempotencyKey, charges[1].IdempotencyKey)
	report := checkInvariants(t, s, s.store, time.Now(), id)
	double := report.Of(invariant.NoDoubleCharge)
	require.Len(t, double, 1, "%s", report)
	require.Equal(t, id, double[0].Order)
	require.Equal(t, paid.IdempotencyKey, double[0].Key)
	require.NotEqual(t, paid.ProviderPaymentID, double[0].ChargeID, "the charge that does not pay the order is the double one")
	require.Contains(t, double[0].Message, fmt.Sprintf("order keeps 2 net charges: %s, %s", charges[0].ID, charges[1].ID))
	require.NotEmpty(t, report.Of(invariant.ChargesMatchAttempts), "%s", report)

	// Which is why a worker refuses an abandon deadline the provider's
	// retention does not cover.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = stack.Start(ctx, stack.Config{
		Timing:   timing,
		Provider: fakeprovider.Config{Retention: 10 * time.Second},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.ErrorContains(t, err, "abandon-after 30m0s must be shorter than the provider's key retention 10s")
}

// requireEveryPromiseKept fails the test unless the run broke no promise:
// no invariant violation, no answer outside the checkout contract, no key
// sent after the provider's retention, and no refund left pending that
// could have settled.
func requireEveryPromiseKept(t *testing.T, sum chaos.Summary) {
	t.Helper()
	require.Empty(t, sum.Report.Violations, "invariant violations")
	require.Empty(t, sum.Unexpected, "answers that break the checkout contract")
	require.Zero(t, sum.LateRequests, "no key was sent after its retention")
	require.Zero(t, sum.RefundsUnsettled, "every refund that could settle settled by itself")
	require.True(t, sum.OK())
}

// runChaos runs a chaos run on the embedded stack, with the shared worker
// binary and the default configuration as edit changes it, within
// timeout, and logs its summary.
func runChaos(t *testing.T, timeout time.Duration, edit func(*chaos.Config)) (chaos.Config, chaos.Summary) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cfg := chaos.DefaultConfig()
	cfg.WorkerBinary, cfg.DataDir = buildBinary(t, chaos.WorkerPackage), t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(testLog{t}, nil))
	edit(&cfg)
	sum, err := chaos.Run(ctx, cfg)
	require.NoError(t, err)
	t.Logf("chaos run summary:\n%s", sum)
	return cfg, sum
}
