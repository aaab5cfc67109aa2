package temporalserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"chargeonce/dev/temporalserver"
	"chargeonce/internal/cputime"
)

const taskQueue = "temporalserver-test"

func greetWorkflow(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var greeting string
	err := workflow.ExecuteActivity(ctx, greet, name).Get(ctx, &greeting)
	return greeting, err
}

func greet(_ context.Context, name string) (string, error) { return "hello " + name, nil }

func awaitReleaseWorkflow(ctx workflow.Context) (string, error) {
	var msg string
	workflow.GetSignalChannel(ctx, "release").Receive(ctx, &msg)
	return msg, nil
}

// tagWorkflow sets the ProviderPaymentId search attribute from workflow code,
// which the history service validates against its own cache.
func tagWorkflow(ctx workflow.Context, paymentID string) error {
	return workflow.UpsertTypedSearchAttributes(ctx, temporal.NewSearchAttributeKeyKeyword("ProviderPaymentId").ValueSet(paymentID))
}

func startServer(t testing.TB, cfg temporalserver.Config) *temporalserver.Server {
	t.Helper()
	srv, err := temporalserver.Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Stop()) })
	return srv
}

// connect dials srv and runs a worker for the test workflows until the test
// ends or the returned stop function is called.
func connect(t testing.TB, srv *temporalserver.Server) (client.Client, func()) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(),
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	require.NoError(t, err)
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(greetWorkflow)
	w.RegisterWorkflow(awaitReleaseWorkflow)
	w.RegisterWorkflow(tagWorkflow)
	w.RegisterActivity(greet)
	require.NoError(t, w.Start())
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			w.Stop()
			c.Close()
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// BenchmarkWorkflowWithOneActivity runs workflows with one activity one
// after another on a server with a database file, as the dev stack runs it:
// the time per operation is the latency of the smallest useful workflow, and
// cpu-ms/op what server, worker and client spend on it together.
//
// The median is reported too: now and then the server misses the close of a
// workflow whose result a client awaits, and the client learns of it only
// when its 20-second long poll expires, which moves the mean of a short run.
func BenchmarkWorkflowWithOneActivity(b *testing.B) {
	srv := startServer(b, temporalserver.Config{DataDir: b.TempDir(), UIPort: -1})
	c, _ := connect(b, srv)
	ctx := b.Context()
	var took []time.Duration
	cpuBefore, err := cputime.Process()
	require.NoError(b, err)
	for b.Loop() {
		start := time.Now()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bench-" + strconv.Itoa(len(took)), TaskQueue: taskQueue}, greetWorkflow, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	cpuAfter, err := cputime.Process()
	require.NoError(b, err)
	cpu := cpuAfter - cpuBefore
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "median-ms")
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(len(took)), "cpu-ms/op")
}

func history(t *testing.T, c client.Client, workflowID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(t.Context(), workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	return events
}

func customSearchAttributes(t *testing.T, c client.Client, namespace string) map[string]enums.IndexedValueType {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(t.Context(), &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	require.NoError(t, err)
	return resp.GetCustomAttributes()
}

func TestStart_InMemoryServerRunsWorkflowsAndIndexesSearchAttributes(t *testing.T) {
	srv := startServer(t, temporalserver.Config{
		UIPort: -1,
		SearchAttributes: map[string]enums.IndexedValueType{
			"OrderId":       enums.INDEXED_VALUE_TYPE_KEYWORD,
			"PaymentStatus": enums.INDEXED_VALUE_TYPE_KEYWORD,
		},
	})
	require.Equal(t, temporalserver.DefaultNamespace, srv.Namespace())
	require.Empty(t, srv.UIAddress())
	require.Contains(t, srv.PersistenceSettings(), "in-memory")
	c, _ := connect(t, srv)

	orderID := temporal.NewSearchAttributeKeyKeyword("OrderId")
	run, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{
		ID:                    "greet-in-memory",
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(orderID.ValueSet("order-42")),
	}, greetWorkflow, "world")
	require.NoError(t, err)
	var greeting string
	require.NoError(t, run.Get(t.Context(), &greeting))
	require.Equal(t, "hello world", greeting)

	require.Equal(t, map[string]enums.IndexedValueType{
		"OrderId":       enums.INDEXED_VALUE_TYPE_KEYWORD,
		"PaymentStatus": enums.INDEXED_VALUE_TYPE_KEYWORD,
	}, customSearchAttributes(t, c, srv.Namespace()))

	// Visibility is written asynchronously after the workflow closes.
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: srv.Namespace(),
			Query:     `OrderId = "order-42"`,
		})
		require.NoError(t, err)
		return len(resp.GetExecutions()) == 1 &&
			resp.GetExecutions()[0].GetExecution().GetWorkflowId() == "greet-in-memory" &&
			resp.GetExecutions()[0].GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, 10*time.Second, 50*time.Millisecond)
}

func TestStart_DataDirKeepsWorkflowsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := temporalserver.Config{
		DataDir:          dir,
		UIPort:           -1,
		SearchAttributes: map[string]enums.IndexedValueType{"OrderId": enums.INDEXED_VALUE_TYPE_KEYWORD},
	}
	first, err := temporalserver.Start(t.Context(), cfg)
	require.NoError(t, err)
	require.Contains(t, first.PersistenceSettings(), filepath.Join(dir, temporalserver.DatabaseFileName))
	c, stopWorker := connect(t, first)

	done, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: "greet-before-restart", TaskQueue: taskQueue}, greetWorkflow, "disk")
	require.NoError(t, err)
	require.NoError(t, done.Get(t.Context(), nil))
	completedHistory := history(t, c, "greet-before-restart")

	waiting, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: "await-release", TaskQueue: taskQueue}, awaitReleaseWorkflow)
	require.NoError(t, err)
	// The workflow is durably waiting once its first workflow task completed.
	require.Eventually(t, func() bool {
		events := history(t, c, "await-release")
		return events[len(events)-1].GetEventType() == enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
	}, 10*time.Second, 50*time.Millisecond)

	stopWorker()
	require.NoError(t, first.Stop())
	require.FileExists(t, filepath.Join(dir, temporalserver.DatabaseFileName))

	// The restart also brings a search attribute the database has not seen.
	cfg.SearchAttributes = map[string]enums.IndexedValueType{
		"OrderId":           enums.INDEXED_VALUE_TYPE_KEYWORD,
		"ProviderPaymentId": enums.INDEXED_VALUE_TYPE_KEYWORD,
	}
	second := startServer(t, cfg)
	c, _ = connect(t, second)

	// Start promises the new attribute is queryable as soon as it returns.
	_, err = c.CountWorkflow(t.Context(), &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: second.Namespace(),
		Query:     `ProviderPaymentId = "pay-1"`,
	})
	require.NoError(t, err)
	_, err = c.CountWorkflow(t.Context(), &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: second.Namespace(),
		Query:     `NeverRegistered = "pay-1"`,
	})
	require.Error(t, err, "the check above must be able to fail")
	require.Equal(t, cfg.SearchAttributes, customSearchAttributes(t, c, second.Namespace()))
	// Workflow code may set it at once too: no workflow task fails on an
	// attribute a service's cache does not know yet.
	tagged, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: "tag-after-restart", TaskQueue: taskQueue}, tagWorkflow, "pay-1")
	require.NoError(t, err)
	require.NoError(t, tagged.Get(t.Context(), nil))
	for _, e := range history(t, c, "tag-after-restart") {
		require.NotEqual(t, enums.EVENT_TYPE_WORKFLOW_TASK_FAILED, e.GetEventType(), "event %d", e.GetEventId())
	}
	require.Eventually(t, func() bool {
		resp, err := c.CountWorkflow(t.Context(), &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: second.Namespace(),
			Query:     `ProviderPaymentId = "pay-1"`,
		})
		require.NoError(t, err)
		return resp.GetCount() == 1
	}, 10*time.Second, 50*time.Millisecond)

	after := history(t, c, "greet-before-restart")
	require.Len(t, after, len(completedHistory))
	for i := range after {
		require.Equal(t, completedHistory[i].GetEventId(), after[i].GetEventId())
		require.Equal(t, completedHistory[i].GetEventType(), after[i].GetEventType())
	}
	require.Equal(t, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, after[len(after)-1].GetEventType())

	require.NoError(t, c.SignalWorkflow(t.Context(), "await-release", waiting.GetRunID(), "release", "released after restart"))
	var msg string
	require.NoError(t, c.GetWorkflow(t.Context(), "await-release", waiting.GetRunID()).Get(t.Context(), &msg))
	require.Equal(t, "released after restart", msg)
}

func TestStart_SearchAttributeWithAnotherTypeIsRejected(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, temporalserver.Config{
		DataDir:          dir,
		UIPort:           -1,
		SearchAttributes: map[string]enums.IndexedValueType{"OrderId": enums.INDEXED_VALUE_TYPE_KEYWORD},
	})
	require.NoError(t, first.Stop())

	_, err := temporalserver.Start(t.Context(), temporalserver.Config{
		DataDir:          dir,
		UIPort:           -1,
		SearchAttributes: map[string]enums.IndexedValueType{"OrderId": enums.INDEXED_VALUE_TYPE_INT},
	})
	require.ErrorContains(t, err, `search attribute "OrderId" of namespace "default" is registered as Keyword, not Int`)
}

func TestStart_BusyPortIsReportedByRoleAndNumber(t *testing.T) {
	tests := []struct {
		role   string
		config func(port int) temporalserver.Config
	}{
		{"frontend", func(port int) temporalserver.Config {
			return temporalserver.Config{FrontendPort: port, UIPort: -1}
		}},
		{"ui", func(port int) temporalserver.Config {
			return temporalserver.Config{UIPort: port}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { _ = busy.Close() })
			port := busy.Addr().(*net.TCPAddr).Port

			srv, err := temporalserver.Start(t.Context(), tt.config(port))
			require.Nil(t, srv)
			var portErr *temporalserver.PortError
			require.ErrorAs(t, err, &portErr)
			require.Equal(t, tt.role, portErr.Role)
			require.Equal(t, port, portErr.Port)
			require.Contains(t, err.Error(), tt.role+" port "+strconv.Itoa(port))
		})
	}
}

func TestStart_WebUIServesPagesWithCodecEndpointUntilStop(t *testing.T) {
	const codecEndpoint = "http://127.0.0.1:9999/codec"
	srv := startServer(t, temporalserver.Config{CodecEndpoint: codecEndpoint})
	require.True(t, strings.HasPrefix(srv.UIAddress(), "http://127.0.0.1:"), srv.UIAddress())
	httpClient := &http.Client{Timeout: 10 * time.Second}

	resp, err := httpClient.Get(srv.UIAddress() + "/")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")

	resp, err = httpClient.Get(srv.UIAddress() + "/api/v1/settings")
	require.NoError(t, err)
	var settings struct {
		DefaultNamespace string
		Codec            struct{ Endpoint string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&settings))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, codecEndpoint, settings.Codec.Endpoint)
	require.Equal(t, temporalserver.DefaultNamespace, settings.DefaultNamespace)

	require.NoError(t, srv.Stop())
	_, err = httpClient.Get(srv.UIAddress() + "/")
	require.Error(t, err, "the web UI must stop with the server")
}

func TestStart_RejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name    string
		config  temporalserver.Config
		wantErr string
	}{
		{"host name instead of IP", temporalserver.Config{Host: "localhost"}, `host "localhost" is not an IP address`},
		{"frontend port out of range", temporalserver.Config{FrontendPort: 65536}, "frontend port 65536 is out of range"},
		{"negative frontend port", temporalserver.Config{FrontendPort: -1}, "frontend port -1 is out of range"},
		{"UI port out of range", temporalserver.Config{UIPort: 70000}, "UI port 70000 is out of range"},
		{"data dir with URI syntax", temporalserver.Config{DataDir: "/tmp/a?b"}, "must not contain"},
		{"search attribute without type", temporalserver.Config{
			SearchAttributes: map[string]enums.IndexedValueType{"OrderId": enums.INDEXED_VALUE_TYPE_UNSPECIFIED},
		}, `search attribute "OrderId" has no valid type`},
		{"search attribute without name", temporalserver.Config{
			SearchAttributes: map[string]enums.IndexedValueType{"": enums.INDEXED_VALUE_TYPE_KEYWORD},
		}, "search attribute with empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := temporalserver.Start(t.Context(), tt.config)
			require.Nil(t, srv)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
