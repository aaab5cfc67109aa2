package alert_test

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"chargeonce/internal/alert"
)

func counted(t *testing.T, reg prometheus.Gatherer, n alert.Name) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != alert.MetricName {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "alert" && l.GetValue() == string(n) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	require.Failf(t, "no series", "%s has no series for alert %q", alert.MetricName, n)
	return 0
}

// written is a logger whose records are all written, and so counted.
func written() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func TestCounting_CountsAlertRecordsByName(t *testing.T) {
	out := new(bytes.Buffer)
	reg := prometheus.NewRegistry()
	logger, err := alert.Counting(slog.New(slog.NewTextHandler(out, nil)), reg)
	require.NoError(t, err)

	logger.Info("attempt settled", "key", "k1")
	logger.Error("request failed", "error", "boom")
	logger.Error("provider refused the request", alert.Attr(alert.ContractViolation), "key", "k1")
	logger.With("key", "k2").Error("provider refused the request", alert.Attr(alert.ContractViolation))
	logger.With(alert.Attr(alert.DoubleCharge)).Error("two charges", "charges", []string{"ch_1", "ch_2"})

	require.Equal(t, 2.0, counted(t, reg, alert.ContractViolation))
	require.Equal(t, 1.0, counted(t, reg, alert.DoubleCharge))
	require.Equal(t, 0.0, counted(t, reg, alert.ChargeMismatch))
	require.Equal(t, 3, strings.Count(out.String(), "alert="), "the lines are written as they were logged")
	require.Contains(t, out.String(), `level=ERROR msg="provider refused the request" alert=contract_violation key=k1`)
}

func TestCounting_EveryNameStartsAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := alert.Counting(written(), reg)
	require.NoError(t, err)

	for _, n := range []alert.Name{alert.ContractViolation, alert.ChargeMismatch, alert.DoubleCharge, alert.NeedsReview, alert.OutcomeUnrecorded, alert.HandlerPanic,
		alert.UnknownCharge, alert.RefundUnknown, alert.LateChargeRefunded, alert.RefundFailedAfterSuccess, alert.RefundMismatch} {
		require.Equal(t, 0.0, counted(t, reg, n), n)
	}
}

func TestCounting_RegistersOncePerRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := alert.Counting(written(), reg)
	require.NoError(t, err)
	second, err := alert.Counting(written(), reg)
	require.NoError(t, err)

	first.Error("x", alert.Attr(alert.NeedsReview))
	second.Error("y", alert.Attr(alert.NeedsReview))

	require.Equal(t, 2.0, counted(t, reg, alert.NeedsReview))
	n, err := testutil.GatherAndCount(reg, alert.MetricName)
	require.NoError(t, err)
	require.Equal(t, 13, n, "one series per name")
}

func TestCounting_RefusesANameTakenByAnotherKindOfMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: alert.MetricName, Help: "a gauge"}, []string{"alert"}))

	_, err := alert.Counting(written(), reg)

	require.ErrorContains(t, err, alert.MetricName)
}

func TestAlertRules_PageOnTheCounterByName(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "alerts.yml"))
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	var exprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr, alert.MetricName) {
				exprs = append(exprs, r.Expr)
			}
		}
	}
	require.Len(t, exprs, 1, "one rule pages on every alert")
	require.Contains(t, exprs[0], "increase("+alert.MetricName+"[")
	require.Contains(t, exprs[0], "by (alert)", "the page names the alert")
}
