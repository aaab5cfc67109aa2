package temporalclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// PollInterval is how often WaitFor probes again.
const PollInterval = 50 * time.Millisecond

// probeTimeout bounds one probe, so that a call stuck on a service that is
// still starting is retried instead of eating the whole wait.
const probeTimeout = 2 * time.Second

// WaitFor calls probe, each call bounded by a short timeout, until it
// succeeds or ctx ends. what names the awaited state in the error.
func WaitFor(ctx context.Context, what string, probe func(context.Context) error) error {
	tick := time.NewTicker(PollInterval)
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
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// EnsureNamespace registers namespace with the given retention unless it
// exists, and waits until the frontend serves it. It reports whether it
// registered the namespace.
func EnsureNamespace(ctx context.Context, c client.Client, namespace string, retention time.Duration) (created bool, err error) {
	svc := c.WorkflowService()
	describe := func(ctx context.Context) error {
		_, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		return err
	}
	// DescribeNamespace reads the database, while the operator API serves
	// from the namespace cache, which a server of several processes
	// refreshes every few seconds: a new namespace is served once both know it.
	serves := func(ctx context.Context) error {
		if err := describe(ctx); err != nil {
			return err
		}
		_, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		return err
	}
	var notFound *serviceerror.NamespaceNotFound
	if err := describe(ctx); errors.As(err, &notFound) {
		_, err := svc.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        namespace,
			WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		})
		var exists *serviceerror.NamespaceAlreadyExists
		if err != nil && !errors.As(err, &exists) {
			return false, fmt.Errorf("register namespace %q: %w", namespace, err)
		}
		created = err == nil
	}
	return created, WaitFor(ctx, "the frontend to serve namespace "+namespace, serves)
}

// MissingSearchAttributes returns the attributes of want that namespace
// lacks. An attribute registered with another type, or one that is a system
// attribute, is an error: no registration can mend it.
func MissingSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, want map[string]enums.IndexedValueType) (map[string]enums.IndexedValueType, error) {
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list the search attributes of namespace %q: %w", namespace, err)
	}
	missing := make(map[string]enums.IndexedValueType)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		typ := want[name]
		if _, ok := have.GetSystemAttributes()[name]; ok {
			return nil, fmt.Errorf("search attribute %q is a system attribute of Temporal", name)
		}
		current, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case current != typ:
			return nil, fmt.Errorf("search attribute %q of namespace %q is registered as %s, not %s; it cannot be changed, so use a fresh namespace",
				name, namespace, current, typ)
		}
	}
	return missing, nil
}

// AddSearchAttributes registers the attributes and waits until visibility
// queries accept them.
func AddSearchAttributes(ctx context.Context, c client.Client, namespace string, attrs map[string]enums.IndexedValueType) error {
	if len(attrs) == 0 {
		return nil
	}
	_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: attrs,
	})
	if err != nil {
		return fmt.Errorf("add search attributes to namespace %q: %w", namespace, err)
	}
	names := slices.Sorted(maps.Keys(attrs))
	clauses := make([]string, len(names))
	for i, name := range names {
		clauses[i] = name + " IS NULL"
	}
	query := strings.Join(clauses, " AND ")
	return WaitFor(ctx, "search attributes "+strings.Join(names, ", ")+" to be queryable", func(ctx context.Context) error {
		_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		return err
	})
}

// RequireSearchAttributes refuses a namespace that lacks one of the search
// attributes in want, or has one with another type, naming each of them.
// A process checks it at start, so that a namespace set up by hand fails
// at once rather than at the first payment.
func RequireSearchAttributes(ctx context.Context, c client.Client, namespace string, want map[string]enums.IndexedValueType) error {
	missing, err := MissingSearchAttributes(ctx, c.OperatorService(), namespace, want)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(missing))
	for i, name := range names {
		names[i] = name + " (" + missing[name].String() + ")"
	}
	return fmt.Errorf("namespace %q lacks the search attributes %s; register them with temporal-setup (go run ./cmd/temporal-setup)",
		namespace, strings.Join(names, ", "))
}
