package temporalserver

import (
	"context"
	"fmt"
	"log/slog"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"chargeonce/internal/temporalclient"
)

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
	err = temporalclient.WaitFor(ctx, "frontend to serve namespace "+namespace, func(ctx context.Context) error {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		return err
	})
	if err != nil || len(want) == 0 {
		return err
	}
	missing, err := temporalclient.MissingSearchAttributes(ctx, c.OperatorService(), namespace, want)
	if err != nil || len(missing) == 0 {
		return err
	}
	// Each service caches the namespace's attributes and would reject the
	// new ones until its next refresh.
	defer dc.catchUpSearchAttributes(searchAttributeCatchUp)()
	return temporalclient.AddSearchAttributes(ctx, c, namespace, missing)
}
