package temporalserver

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// probeTimeout bounds one readiness probe, so that a call stuck on a service
// that is still starting is retried instead of eating the whole start budget.
const probeTimeout = 2 * time.Second

// prepareNamespace waits until the frontend serves the namespace, then
// registers the search attributes it lacks and waits until visibility queries
// accept them.
func prepareNamespace(ctx context.Context, frontend, namespace string, want map[string]enums.IndexedValueType, dc *dynamicConfig, logger *slog.Logger) error {
	c, err := client.NewLazyClient(client.Options{
		HostPort:  frontend,
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(logger),
	})
	if err != nil {
		return fmt.Errorf("temporalserver: create client: %w", err)
	}
	defer c.Close()
	svc := c.WorkflowService()

	err = poll(ctx, "frontend to serve namespace "+namespace, func(ctx context.Context) error {
		_, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		return err
	})
	if err != nil {
		return err
	}

	op := c.OperatorService()
	missing, err := missingSearchAttributes(ctx, op, namespace, want)
	if err != nil || len(missing) == 0 {
		return err
	}
	// Each service caches the namespace's attributes and would reject the
	// new ones until its next refresh.
	defer dc.catchUpSearchAttributes(searchAttributeCatchUp)()
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("temporalserver: add search attributes: %w", err)
	}
	added := slices.Sorted(maps.Keys(missing))
	// Start promises that queries accept the new attributes.
	clauses := make([]string, len(added))
	for i, name := range added {
		clauses[i] = name + " IS NULL"
	}
	query := strings.Join(clauses, " AND ")
	return poll(ctx, "search attributes "+strings.Join(added, ", ")+" to be queryable", func(ctx context.Context) error {
		_, err := svc.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		return err
	})
}

// missingSearchAttributes returns the attributes of want that namespace
// lacks. An attribute registered with another type is an error.
func missingSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, want map[string]enums.IndexedValueType) (map[string]enums.IndexedValueType, error) {
	if len(want) == 0 {
		return nil, nil
	}
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("temporalserver: list search attributes: %w", err)
	}
	missing := make(map[string]enums.IndexedValueType)
	for name, typ := range want {
		if _, ok := have.GetSystemAttributes()[name]; ok {
			return nil, fmt.Errorf("temporalserver: search attribute %q is a system attribute", name)
		}
		current, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case current != typ:
			return nil, fmt.Errorf("temporalserver: search attribute %q is registered as %s, not %s; use another name or a fresh data directory",
				name, current, typ)
		}
	}
	return missing, nil
}

// poll calls probe until it succeeds or ctx ends.
func poll(ctx context.Context, what string, probe func(context.Context) error) error {
	tick := time.NewTicker(readinessPollInterval)
	defer tick.Stop()
	for {
		probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := probe(probeCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporalserver: waiting for %s: %w (last error: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
