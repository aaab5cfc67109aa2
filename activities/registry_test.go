package activities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/activities/activitiestest"
	"chargeonce/provider"
)

// twoProviders returns an Env whose fake is the provider "us", and whose
// activities reach it and the fake of a second Env, "eu", the default,
// through one registry.
func twoProviders(t *testing.T) (us, eu *activitiestest.Env) {
	t.Helper()
	us = activitiestest.New(t, activitiestest.Options{ProviderName: "us"})
	eu = activitiestest.New(t, activitiestest.Options{ProviderName: "eu"})
	usPort, err := us.Activities.Providers.Get("us")
	require.NoError(t, err)
	euPort, err := eu.Activities.Providers.Get("eu")
	require.NoError(t, err)
	us.Activities.Providers, err = provider.NewRegistry(map[string]provider.Port{"us": usPort, "eu": euPort}, "eu")
	require.NoError(t, err)
	return us, eu
}

func TestCharge_GoesToTheProviderTheIntentNamesAndTheAttemptKeepsItsName(t *testing.T) {
	us, eu := twoProviders(t)
	intent := us.NewIntent(t, "tok_visa", amount, time.Now())
	require.Equal(t, "us", intent.Provider)

	res, err := charge(t, newActivityEnv(t, us, 0), intent)

	require.NoError(t, err)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Equal(t, []string{activitiestest.Quoted(intent.Key)}, us.ChargeKeys())
	require.Empty(t, eu.ChargeKeys(), "the other provider is never asked")
	stored := us.Attempt(t, intent.Key)
	require.Equal(t, "us", stored.Provider)
	require.Len(t, stored.Requests, 1)

	val, err := newActivityEnv(t, us, 0).ExecuteActivity(acts.FindCharge, activities.FindChargeInput{
		Key: intent.Key, MerchantReference: intent.MerchantReference, Amount: intent.Amount, Provider: intent.Provider,
	})
	require.NoError(t, err)
	var found activities.FindChargeResult
	require.NoError(t, val.Get(&found))
	require.Equal(t, activities.FindChargeResult{Found: activities.FoundSucceeded, ProviderPaymentID: res.ProviderPaymentID}, found)
}

// An intent recorded before intents named their provider goes to the
// default one.
func TestCharge_AnIntentWithoutAProviderGoesToTheDefault(t *testing.T) {
	us, eu := twoProviders(t)
	reg := prometheus.NewRegistry()
	us.Activities.Metrics = activities.NewMetrics(reg)
	intent := us.NewIntent(t, "tok_visa", amount, time.Now())
	intent.Provider = ""

	_, err := charge(t, newActivityEnv(t, us, 0), intent)

	require.NoError(t, err)
	require.Empty(t, us.ChargeKeys())
	require.Equal(t, []string{activitiestest.Quoted(intent.Key)}, eu.ChargeKeys())
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chargeonce_provider_requests_total Requests that create something at a provider (a charge, a refund), by provider, operation and outcome (approved, declined, in_flight, timeout, breaker_open, ...).
# TYPE chargeonce_provider_requests_total counter
chargeonce_provider_requests_total{operation="charge",outcome="approved",provider="eu"} 1
`), "chargeonce_provider_requests_total"), "counted for the provider it went to")
}

func TestActivities_RefuseAnUnknownProviderAndSendNothing(t *testing.T) {
	us, eu := twoProviders(t)
	intent := us.NewIntent(t, "tok_visa", amount, time.Now())
	intent.Provider = "apac"
	aenv := newActivityEnv(t, us, 0)

	_, err := charge(t, aenv, intent)
	appErr := appError(t, err)
	require.Equal(t, activities.ErrTypeInvalidRequest, appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.Contains(t, appErr.Error(), `unknown provider "apac": this worker reaches "eu", "us"`)

	_, err = aenv.ExecuteActivity(acts.FindCharge, activities.FindChargeInput{
		Key: intent.Key, MerchantReference: intent.MerchantReference, Amount: intent.Amount, Provider: "apac",
	})
	require.Equal(t, activities.ErrTypeInvalidRequest, appError(t, err).Type())
	_, err = aenv.ExecuteActivity(acts.KeyRetention, activities.KeyRetentionInput{Provider: "apac"})
	require.Equal(t, activities.ErrTypeInvalidRequest, appError(t, err).Type())

	require.Empty(t, us.ChargeKeys())
	require.Empty(t, eu.ChargeKeys())
	require.Empty(t, us.Attempt(t, intent.Key).Requests, "nothing was sent, so nothing is logged")
}

func TestRefund_GoesToTheProviderTheIntentNamesAndTheRefundKeepsItsName(t *testing.T) {
	us, eu := twoProviders(t)
	paid, _ := us.NewPaidIntent(t, "tok_visa", amount, time.Now())
	r := us.NewRefund(t, paid.OrderID, 0, time.Now())
	require.Equal(t, "us", r.Provider)

	res, err := refund(t, newActivityEnv(t, us, 0), r)

	require.NoError(t, err)
	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
	require.Equal(t, []string{activitiestest.Quoted(r.Key)}, us.RefundKeys())
	require.Empty(t, eu.RefundKeys())
	stored, err := us.Store.GetRefund(t.Context(), r.Key)
	require.NoError(t, err)
	require.Equal(t, "us", stored.Provider)

	r.Provider = "apac"
	_, err = refund(t, newActivityEnv(t, us, 0), r)
	require.Equal(t, activities.ErrTypeInvalidRequest, appError(t, err).Type())
	require.Len(t, us.RefundKeys(), 1, "an unknown provider is sent nothing")
}
