package metrics

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// backlogTimeout bounds the reads of the backlogs at one scrape, so that a
// Temporal that does not answer slows a scrape down by this much at most.
const backlogTimeout = 2 * time.Second

// lookupBacklog reads the backlog of each lookup task queue from Temporal
// on every scrape, like openAttempts reads the store.
type lookupBacklog struct {
	temporal  workflowservice.WorkflowServiceClient
	namespace string
	queues    []string
	logger    *slog.Logger
	count     *prometheus.Desc
	age       *prometheus.Desc
}

// RegisterLookupBacklog registers the gauges chargeonce_lookup_backlog and
// chargeonce_lookup_backlog_age_seconds, by task_queue, one of queues (the
// lookup task queues, chargeonce.LookupTaskQueueOf): the lookups that are
// due but not yet run, waiting on the queue in namespace, and how long the
// oldest has waited, as Temporal approximates them. A backlog that grows
// means the open attempts ask for more lookups than the queue's provider
// allows; its age is how late lookups run.
func RegisterLookupBacklog(reg prometheus.Registerer, temporal workflowservice.WorkflowServiceClient, namespace string, queues []string, logger *slog.Logger) error {
	return reg.Register(&lookupBacklog{
		temporal:  temporal,
		namespace: namespace,
		queues:    slices.Clone(queues),
		logger:    logger,
		count: prometheus.NewDesc("chargeonce_lookup_backlog",
			"Lookups at the provider that are due but not yet run: tasks waiting on the lookup task queue.", []string{"task_queue"}, nil),
		age: prometheus.NewDesc("chargeonce_lookup_backlog_age_seconds",
			"How long the oldest lookup waiting on the lookup task queue has waited; 0 when none waits.", []string{"task_queue"}, nil),
	})
}

// Describe implements prometheus.Collector.
func (b *lookupBacklog) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.count
	ch <- b.age
}

// Collect implements prometheus.Collector.
func (b *lookupBacklog) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	for _, queue := range b.queues {
		resp, err := b.temporal.DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace:     b.namespace,
			TaskQueue:     &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
			TaskQueueType: enumspb.TASK_QUEUE_TYPE_ACTIVITY,
			ReportStats:   true,
		})
		if err != nil {
			b.logger.Warn("lookup backlog metrics not collected", "task_queue", queue, "error", err)
			ch <- prometheus.NewInvalidMetric(b.count, err)
			continue
		}
		stats := resp.GetStats()
		ch <- prometheus.MustNewConstMetric(b.count, prometheus.GaugeValue, float64(stats.GetApproximateBacklogCount()), queue)
		ch <- prometheus.MustNewConstMetric(b.age, prometheus.GaugeValue, stats.GetApproximateBacklogAge().AsDuration().Seconds(), queue)
	}
}
