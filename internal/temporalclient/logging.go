package temporalclient

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"chargeonce/internal/logging"
)

// sdkLogger is the SDK's logger for a process that logs to l. The SDK logs
// every poll and task at info level, so its own lines pass only from warn
// up; the loggers that ownLoggers hands to workflow and activity code pass
// at l's level.
func sdkLogger(l *slog.Logger) sdklog.Logger {
	return sdklog.NewStructuredLogger(logging.AtLeast(l, slog.LevelWarn))
}

// ownLoggers marks the loggers that workflow.GetLogger and activity.GetLogger
// return as chargeonce's own (logging.Own), so that the payment story is
// written at the process's level while the SDK's chatter stays filtered.
//
// The SDK's tags cannot tell the two apart: the SDK writes its own lines
// about a workflow (ExecuteActivity, NewTimer, ProcessEvent, …) through the
// very logger that workflow.GetLogger returns, tagged with the same
// WorkflowType and WorkflowID. Only what is handed to our code can be marked,
// and the mark is added to the SDK's logger rather than replacing it, so
// that the SDK still drops workflow lines during a replay.
type ownLoggers struct{ interceptor.InterceptorBase }

// InterceptWorkflow implements interceptor.WorkerInterceptor.
func (*ownLoggers) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &ownWorkflowInbound{interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (*ownLoggers) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &ownActivityInbound{interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type ownWorkflowInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (w *ownWorkflowInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return w.Next.Init(&ownWorkflowOutbound{interceptor.WorkflowOutboundInterceptorBase{Next: outbound}})
}

type ownWorkflowOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

func (w *ownWorkflowOutbound) GetLogger(ctx workflow.Context) sdklog.Logger {
	return sdklog.With(w.Next.GetLogger(ctx), logging.Own())
}

type ownActivityInbound struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *ownActivityInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&ownActivityOutbound{interceptor.ActivityOutboundInterceptorBase{Next: outbound}})
}

type ownActivityOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
}

func (a *ownActivityOutbound) GetLogger(ctx context.Context) sdklog.Logger {
	return sdklog.With(a.Next.GetLogger(ctx), logging.Own())
}
