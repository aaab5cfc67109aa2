package metrics

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"chargeonce"
)

// pinnedRuns counts, on every scrape, the open runs pinned to each version
// of the Worker Deployment chargeonce.DeploymentName, as the rollout
// command's status does.
type pinnedRuns struct {
	temporal  workflowservice.WorkflowServiceClient
	namespace string
	logger    *slog.Logger
	count     *prometheus.Desc
}

// RegisterPinnedRuns registers the gauge chargeonce_pinned_runs, by
// build_id, each version of the Worker Deployment chargeonce.DeploymentName
// in namespace: the open workflow runs pinned to that version, counted
// through visibility with chargeonce.PinnedRunsQuery at each scrape, a
// second or so behind the runs. A version whose count is 0 and that is
// neither current nor ramping is drained: its workers may stop. Before any
// worker has polled, the deployment does not exist and the gauge has no
// series.
func RegisterPinnedRuns(reg prometheus.Registerer, temporal workflowservice.WorkflowServiceClient, namespace string, logger *slog.Logger) error {
	return reg.Register(&pinnedRuns{
		temporal:  temporal,
		namespace: namespace,
		logger:    logger,
		count: prometheus.NewDesc("chargeonce_pinned_runs",
			"Open workflow runs pinned to the version of the Worker Deployment chargeonce with this build ID.", []string{"build_id"}, nil),
	})
}

// Describe implements prometheus.Collector.
func (p *pinnedRuns) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.count
}

// Collect implements prometheus.Collector.
func (p *pinnedRuns) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	desc, err := p.temporal.DescribeWorkerDeployment(ctx, &workflowservice.DescribeWorkerDeploymentRequest{
		Namespace:      p.namespace,
		DeploymentName: chargeonce.DeploymentName,
	})
	if err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return
		}
		p.logger.Warn("pinned runs metrics not collected", "deployment", chargeonce.DeploymentName, "error", err)
		ch <- prometheus.NewInvalidMetric(p.count, err)
		return
	}
	for _, v := range desc.GetWorkerDeploymentInfo().GetVersionSummaries() {
		buildID := v.GetDeploymentVersion().GetBuildId()
		res, err := p.temporal.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: p.namespace,
			Query:     chargeonce.PinnedRunsQuery(buildID),
		})
		if err != nil {
			p.logger.Warn("pinned runs metrics not collected", "build_id", buildID, "error", err)
			ch <- prometheus.NewInvalidMetric(p.count, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(p.count, prometheus.GaugeValue, float64(res.GetCount()), buildID)
	}
}
