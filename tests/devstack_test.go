package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/api/console"
	"chargeonce/dev/stack"
	"chargeonce/dev/temporalserver"
	"chargeonce/internal/codec"
	"chargeonce/internal/openapitest"
	"chargeonce/internal/syncbuf"
	"chargeonce/worker"
	"chargeonce/workflows"
)

// devProcess is `go run ./dev` started the way a newcomer starts it, on
// free ports, with the addresses read back from its banner.
type devProcess struct {
	cmd      *exec.Cmd
	exited   chan error
	api      string
	console  string
	temporal string
	ui       string
	provider string
	// backup is the backup provider's URL; empty with
	// --backup-provider=false.
	backup string
	// keyFile is where the banner says the API key is.
	keyFile string
	stderr  *syncbuf.Buffer
	// stdout is what dev printed after its banner, such as the dev
	// receiver's line per event.
	stdout *syncbuf.Buffer
}

var (
	bannerLine = regexp.MustCompile(`^\s+(checkout API|console|Temporal Web UI|Temporal|fake provider|backup provider)\s+(\S+)`)
	keyLine    = regexp.MustCompile(`^\s+API key\s+every scope, (?:generated into|kept in) (\S+) `)
)

// startDev runs the dev binary on dataDir, with flags after the ones that
// place it, and waits for its banner.
func startDev(t *testing.T, bin, dataDir string, flags ...string) *devProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--data-dir", dataDir,
		"--temporal-port", "0", "--ui-port", "0", "--provider-port", "0", "--backup-port", "0", "--api-port", "0", "--receiver", "127.0.0.1:0"}, flags...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	d := &devProcess{cmd: cmd, exited: make(chan error, 1), stderr: &syncbuf.Buffer{}, stdout: &syncbuf.Buffer{}}
	cmd.Stderr = d.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	ready := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stdout)
		up := false
		for scanner.Scan() {
			line := scanner.Text()
			if up {
				fmt.Fprintln(d.stdout, line)
				continue
			}
			if m := bannerLine.FindStringSubmatch(line); m != nil {
				switch m[1] {
				case "checkout API":
					d.api = m[2]
				case "console":
					d.console = m[2]
				case "Temporal Web UI":
					d.ui = strings.TrimSuffix(m[2], "/namespaces/default/workflows")
				case "Temporal":
					d.temporal = m[2]
				case "fake provider":
					d.provider = m[2]
				case "backup provider":
					d.backup = m[2]
				}
			}
			if m := keyLine.FindStringSubmatch(line); m != nil {
				d.keyFile = m[1]
			}
			if strings.HasPrefix(line, "Ctrl-C stops everything") {
				up = true
				close(ready)
			}
		}
		d.exited <- cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-d.exited:
		t.Fatalf("dev exited before its banner: %v\n%s", err, d.stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("dev printed no banner within 2 minutes\n%s", d.stderr.String())
	}
	require.NotEmpty(t, d.api)
	require.NotEmpty(t, d.temporal)
	require.NotEmpty(t, d.ui)
	require.NotEmpty(t, d.provider)
	require.Equal(t, filepath.Join(dataDir, "api.key"), d.keyFile, "the banner says where the API key is")
	return d
}

// stop sends Ctrl-C and requires a clean exit.
func (d *devProcess) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	d.waitStopped(t)
}

func (d *devProcess) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case err := <-d.exited:
		require.NoError(t, err, "dev should exit cleanly on Ctrl-C\n%s", d.stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("dev did not stop within a minute of Ctrl-C")
	}
}

// serverStopNoise is what the embedded Temporal server logs as errors when
// it stops under calls in progress, each of which ends either way with
// nothing lost:
//   - its metrics interceptor (go.temporal.io/server/common/metrics,
//     grpc.go), when its gRPC server stops under a call that has sent its
//     headers already;
//   - its matching service (service/matching/physical_task_queue_manager.go),
//     when the stop cancels a poller's wait for its worker deployment
//     version to reach the task queue's user data: the line says "timed
//     out" whatever ended the wait.
var serverStopNoise = []string{
	`msg="unable to add metrics baggage to gRPC trailer" error="rpc error: code = Internal desc = transport: SendHeader called multiple times"`,
	`msg="timed out waiting for worker deployment version to appear in user data" component=matching-engine`,
}

// logTime reads the time of a log line of dev's, which logs in slog's text
// format.
var logTime = regexp.MustCompile(`^time=(\S+) level=(\S+) `)

// stopWithARequestInFlight sends Ctrl-C while a request to the API is in
// progress, and requires that dev names what it waits for, one line per
// part, and logs no warning or error from the signal on.
func (d *devProcess) stopWithARequestInFlight(t *testing.T) {
	t.Helper()
	u, err := url.Parse(d.api)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	key, err := os.ReadFile(d.keyFile)
	require.NoError(t, err)
	// The server answers "100 Continue" when the handler starts to read the
	// body, which is then in progress until the body comes.
	_, err = fmt.Fprintf(conn, "POST /api/orders HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", u.Host, strings.TrimSpace(string(key)))
	require.NoError(t, err)
	answers := bufio.NewReader(conn)
	status, err := answers.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", status)
	end, err := answers.ReadString('\n') // the interim answer's empty header
	require.NoError(t, err)
	require.Equal(t, "\r\n", end)

	signalled := time.Now()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	require.Eventually(t, func() bool {
		return strings.Contains(d.stdout.String(), "stopping: checkout API, waiting for 1 request in flight (up to 12s)…\n")
	}, time.Minute, 20*time.Millisecond, "%s", d.stdout)
	_, err = conn.Write([]byte("{}")) // an order without an amount: refused, nothing changes
	require.NoError(t, err)
	status, err = answers.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, status, " 400 ", "the request in flight is answered before the API stops")
	d.waitStopped(t)

	require.Equal(t, "\nstopping: checkout API, waiting for 1 request in flight (up to 12s)…\n"+
		"stopping: payment worker…\n"+
		"stopping: Temporal server…\n"+
		"stopping: backup provider…\n"+
		"stopping: fake provider…\n"+
		"stopped.\n", d.stdout.String())
	for line := range strings.Lines(d.stderr.String()) {
		m := logTime.FindStringSubmatch(line)
		if m == nil || (m[2] != "WARN" && m[2] != "ERROR") || slices.ContainsFunc(serverStopNoise, func(noise string) bool { return strings.Contains(line, noise) }) {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		require.NoError(t, err)
		require.True(t, at.Before(signalled), "dev logs no warning or error while it stops: %s", line)
	}
}

func (d *devProcess) post(t *testing.T, path, body string) map[string]any {
	t.Helper()
	return decodeBody(t, d.send(t, http.MethodPost, path, body))
}

func (d *devProcess) get(t *testing.T, path string) map[string]any {
	t.Helper()
	return decodeBody(t, d.send(t, http.MethodGet, path, ""))
}

// refund refunds the order under a new Idempotency-Key.
func (d *devProcess) refund(t *testing.T, orderID, body string) map[string]any {
	t.Helper()
	req := d.request(t, http.MethodPost, "/api/orders/"+orderID+"/refunds", body)
	req.Header.Set("Idempotency-Key", activitiestest.Quoted(uuid.NewString()))
	return decodeBody(t, d.do(t, req))
}

// send makes one request with the key the dev stack keeps in its data
// directory.
func (d *devProcess) send(t *testing.T, method, path, body string) *http.Response {
	t.Helper()
	return d.do(t, d.request(t, method, path, body))
}

// request is a request with the key the dev stack keeps in its data
// directory, which must be readable by its owner only.
func (d *devProcess) request(t *testing.T, method, path, body string) *http.Request {
	t.Helper()
	info, err := os.Stat(d.keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the API key file")
	key, err := os.ReadFile(d.keyFile)
	require.NoError(t, err)
	req, err := http.NewRequest(method, d.api+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// do sends req and checks the answer against docs/openapi.json as it
// arrives.
func (d *devProcess) do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := (&http.Client{Transport: openapitest.Transport(t, nil)}).Do(req)
	require.NoError(t, err)
	return resp
}

func decodeBody(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 300, "%s", raw)
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
	return v
}

// plainClient reads Temporal without the payload key, as anyone with access
// to the server or its database would.
func plainClient(t *testing.T, address string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: address, Namespace: temporalserver.DefaultNamespace})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func listWorkflowIDs(t *testing.T, c client.Client, query string) []string {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: temporalserver.DefaultNamespace, Query: query})
	require.NoError(t, err)
	var ids []string
	for _, e := range resp.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	return ids
}

// cardToken is distinctive, so that finding it anywhere is meaningful.
const cardToken = "tok_visa_e2e_4242424242"

// abandonAfterOf is the time from creation to abandonment of the order's
// only attempt, as the API shows the order.
func abandonAfterOf(t *testing.T, order map[string]any) time.Duration {
	t.Helper()
	attempts := order["attempts"].([]any)
	require.Len(t, attempts, 1)
	attempt := attempts[0].(map[string]any)
	created, err := time.Parse(time.RFC3339Nano, attempt["createdAt"].(string))
	require.NoError(t, err)
	abandon, err := time.Parse(time.RFC3339Nano, attempt["abandonAt"].(string))
	require.NoError(t, err)
	return abandon.Sub(created)
}

// TestDev_CheckoutIsFoundByOrderAndStatusAndSurvivesARestart also restarts
// dev with other timing flags, which dev, its database's only worker, makes
// the published timing.
func TestDev_CheckoutIsFoundByOrderAndStatusAndSurvivesARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the dev binary twice")
	}
	bin := buildBinary(t, "chargeonce/dev")
	dataDir := filepath.Join(t.TempDir(), "data") // dev creates it
	dev := startDev(t, bin, dataDir)

	anonymous, err := http.Post(dev.api+"/api/orders", "application/json", strings.NewReader(`{"amount":"548.90","currency":"TRY"}`))
	require.NoError(t, err)
	require.NoError(t, anonymous.Body.Close())
	require.Equal(t, http.StatusUnauthorized, anonymous.StatusCode, "the dev stack's API needs its key too")
	order := dev.post(t, "/api/orders", `{"amount":"548.90","currency":"TRY","description":"e2e"}`)
	id := fmt.Sprint(order["id"])
	paid := dev.post(t, "/api/orders/"+id+"/checkout", `{"card_token":"`+cardToken+`"}`)
	require.Equal(t, "paid", paid["status"])
	key := paid["idempotencyKey"].(string)
	require.Equal(t, 30*time.Minute, abandonAfterOf(t, dev.get(t, "/api/orders/"+id)), "the default timing")

	// The console the banner names signs in with the stack's key, and
	// links the order's workflow in the stack's Web UI.
	require.Equal(t, dev.api+console.Path, dev.console)
	apiKey, err := os.ReadFile(dev.keyFile)
	require.NoError(t, err)
	orderPage := signIn(t, dev.console, strings.TrimSpace(string(apiKey))).send(t, http.MethodGet, dev.console+"/orders/"+id, nil)
	require.Equal(t, http.StatusOK, orderPage.status)
	require.Contains(t, orderPage.body, dev.ui+"/namespaces/"+temporalserver.DefaultNamespace+"/workflows/"+key)

	query := fmt.Sprintf(`OrderId=%q AND PaymentStatus="succeeded" AND Provider=%q`, id, chargeonce.DefaultProvider)
	visibility := plainClient(t, dev.temporal)
	require.Eventually(t, func() bool {
		return slices.Equal(listWorkflowIDs(t, visibility, query), []string{key})
	}, 30*time.Second, 200*time.Millisecond, "visibility query %s should find the workflow %s", query, key)

	t.Run("Ctrl-C names what it waits for, quietly", dev.stopWithARequestInFlight)
	dev = startDev(t, bin, dataDir, "--abandon-after", "20m", "--reconcile-min-age", "1m")
	defer dev.stop(t)
	t.Run("another timing replaces the published one, in one line", func(t *testing.T) {
		// stderr is copied from a pipe of its own, which may lag behind the
		// banner; the worker logs this line after its timing is published.
		require.Eventually(t, func() bool {
			return strings.Contains(dev.stderr.String(), "lookups paced at the provider's published rate")
		}, 10*time.Second, 20*time.Millisecond, "%s", dev.stderr)
		var replaced []string
		for line := range strings.Lines(dev.stderr.String()) {
			if strings.Contains(line, "payment timing") {
				replaced = append(replaced, line)
			}
		}
		require.Len(t, replaced, 1, "%s", dev.stderr)
		require.Contains(t, replaced[0], "level=WARN msg=\"payment timing replaced: ")
		require.Contains(t, replaced[0], ` old="attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 30m0s, hold-margin 1h0m0s, hold-warning 24h0m0s" `)
		require.Contains(t, replaced[0], ` new="attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 1m0s, reconcile-interval 1m0s, abandon-after 20m0s, hold-margin 1h0m0s, hold-warning 24h0m0s"`)

		other := dev.post(t, "/api/orders", `{"amount":"10.00","currency":"TRY","description":"e2e"}`)
		otherID := fmt.Sprint(other["id"])
		require.Equal(t, "paid", dev.post(t, "/api/orders/"+otherID+"/checkout", `{"card_token":"tok_visa"}`)["status"])
		require.Equal(t, 20*time.Minute, abandonAfterOf(t, dev.get(t, "/api/orders/"+otherID)), "a new checkout takes the new timing")
		require.Equal(t, 30*time.Minute, abandonAfterOf(t, dev.get(t, "/api/orders/"+id)), "an attempt keeps its deadline")
	})

	again := dev.get(t, "/api/orders/"+id)
	require.Equal(t, "paid", again["status"])
	require.Equal(t, paid["providerPaymentId"], again["providerPaymentId"])
	charge, err := http.Get(dev.provider + "/v1/charges/" + fmt.Sprint(paid["providerPaymentId"]))
	require.NoError(t, err)
	require.Equal(t, key, decodeBody(t, charge)["idempotency_key"], "the fake provider keeps its charges in the data directory")
	require.Equal(t, []string{key}, listWorkflowIDs(t, plainClient(t, dev.temporal), query),
		"the workflow is still found after the restart")
	desc, err := plainClient(t, dev.temporal).DescribeWorkflowExecution(context.Background(), key, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())

	t.Run("history is encrypted", func(t *testing.T) { checkHistoryIsEncrypted(t, dev, dataDir, key) })
	t.Run("Web UI lists the workflow", func(t *testing.T) {
		checkWebUIListsTheWorkflow(t, dev, id, key, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	})
	t.Run("Web UI lists the daily settlement schedule", func(t *testing.T) { checkWebUIListsTheSettlementSchedule(t, dev) })
	t.Run("codec answers only its token's holder", func(t *testing.T) { checkCodecNeedsItsToken(t, dev, dataDir) })
	t.Run("files are the owner's alone", func(t *testing.T) { checkFilesAreTheOwners(t, dataDir) })
	t.Run("every run replays against today's code", func(t *testing.T) { checkEveryRunReplays(t, dev, dataDir, id) })
}

// checkEveryRunReplays adds to the runs above, two paid payments, a
// declined one, two refunds of paidOrderID, one of them held open by the
// provider, and the daily settlement with its settlements, then fetches the history of every run of the dev stack's
// namespace, open or closed, and replays each against today's code, as
// the worker registers it. A change that today's code makes to the
// commands of a run that a deployed worker started fails here.
func checkEveryRunReplays(t *testing.T, dev *devProcess, dataDir, paidOrderID string) {
	t.Helper()
	declined := fmt.Sprint(dev.post(t, "/api/orders", `{"amount":"12.00","currency":"TRY","description":"e2e"}`)["id"])
	resp := dev.send(t, http.MethodPost, "/api/orders/"+declined+"/checkout", `{"card_token":"tok_chargeDeclined"}`)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusPaymentRequired, resp.StatusCode, "the card is declined")
	require.Equal(t, "succeeded", dev.refund(t, paidOrderID, `{"amount":"10.00","reason":"e2e"}`)["status"])
	// A refund that the provider holds pending keeps its run open.
	hold, err := http.NewRequestWithContext(t.Context(), http.MethodPut, dev.provider+"/_admin/refunds/hold", strings.NewReader(`{"hold":true}`))
	require.NoError(t, err)
	hold.Header.Set("Content-Type", "application/json")
	held, err := http.DefaultClient.Do(hold)
	require.NoError(t, err)
	require.NoError(t, held.Body.Close())
	require.Equal(t, http.StatusOK, held.StatusCode)
	pending := dev.refund(t, paidOrderID, `{"amount":"10.00","reason":"e2e held"}`)
	require.Equal(t, "pending", pending["status"])

	temporal := plainClient(t, dev.temporal)
	open, err := temporal.DescribeWorkflowExecution(t.Context(), workflows.RefundWorkflowID(pending["id"].(string)), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, open.GetWorkflowExecutionInfo().GetStatus())
	schedule := temporal.ScheduleClient().GetHandle(t.Context(), worker.SettlementScheduleID(chargeonce.DefaultProvider))
	require.NoError(t, schedule.Trigger(t.Context(), client.ScheduleTriggerOptions{}), "the worker created the schedule at its first start")

	// Visibility lags the runs a little, and the daily settlement starts
	// its settlements as children.
	want := []string{"PaymentWorkflow", "RefundWorkflow", "DailySettlementWorkflow", "SettlementWorkflow"}
	var runs []workflows.Run
	var listed map[string]int
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		runs, err = workflows.FetchRuns(t.Context(), temporal, "")
		if !assert.NoError(c, err) {
			return
		}
		listed = map[string]int{}
		for _, r := range runs {
			listed[r.Type]++
		}
		for _, typ := range want {
			assert.Positive(c, listed[typ], "runs of %s", typ)
		}
	}, time.Minute, 500*time.Millisecond, "every workflow type the worker registers has a run")
	require.GreaterOrEqual(t, listed["PaymentWorkflow"], 3, "two paid payments and a declined one")
	require.GreaterOrEqual(t, listed["RefundWorkflow"], 2, "a refund that succeeded and one still open")

	replayer, err := workflows.NewReplayer(sdkworker.WorkflowReplayerOptions{DataConverter: devDataConverter(t, dataDir)})
	require.NoError(t, err)
	require.Empty(t, workflows.Replay(replayer, runs), "of %d runs: %v", len(runs), listed)
}

// devDataConverter is the data converter of the dev stack's clients, with
// the payload key that dev generated into dataDir on its first start.
func devDataConverter(t *testing.T, dataDir string) converter.DataConverter {
	t.Helper()
	keyring, created, err := codec.LoadOrCreateKeyFile(filepath.Join(dataDir, stack.CodecKeyFile))
	require.NoError(t, err)
	require.False(t, created, "the dev stack generated the key on first start")
	return codec.NewDataConverter(keyring)
}

// checkCodecNeedsItsToken posts to the dev stack's codec as a stranger
// would, and as the CLI does with the token dev generated.
func checkCodecNeedsItsToken(t *testing.T, dev *devProcess, dataDir string) {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(dataDir, stack.CodecTokenFile))
	require.NoError(t, err)
	post := func(authorization string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, dev.api+"/codec/decode", strings.NewReader(`{"payloads":[]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, post(""))
	require.Equal(t, http.StatusUnauthorized, post("Bearer not-the-token-but-long-enough-to-look-like-one"))
	require.Equal(t, http.StatusOK, post("Bearer "+strings.TrimSpace(string(token))))
}

// checkFilesAreTheOwners reads the modes of what dev created: the data
// directory, its databases and its secrets.
func checkFilesAreTheOwners(t *testing.T, dataDir string) {
	t.Helper()
	info, err := os.Stat(dataDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the data directory")
	for _, name := range []string{stack.AppDBFile, stack.ProviderDBFile, temporalserver.DatabaseFileName,
		stack.CodecKeyFile, stack.CodecTokenFile, stack.CardHashKeyFile, stack.WebhookSecretFile} {
		info, err := os.Stat(filepath.Join(dataDir, name))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s", name)
	}
}

// checkHistoryIsEncrypted reads the raw history, as stored by Temporal, and
// requires the card token to be nowhere in it, while a client holding the
// key reads the token back from the workflow's input.
func checkHistoryIsEncrypted(t *testing.T, dev *devProcess, dataDir, key string) {
	t.Helper()
	var raw []byte
	var started *historypb.WorkflowExecutionStartedEventAttributes
	events := plainClient(t, dev.temporal).GetWorkflowHistory(context.Background(), key, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for events.HasNext() {
		e, err := events.Next()
		require.NoError(t, err)
		b, err := proto.Marshal(e)
		require.NoError(t, err)
		raw = append(raw, b...)
		if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			started = a
		}
	}
	require.NotNil(t, started)
	require.NotContains(t, string(raw), cardToken, "the card token must not be in clear text in the history")
	payload := started.GetInput().GetPayloads()[0]
	require.Equal(t, codec.MetadataEncodingEncrypted, string(payload.GetMetadata()[converter.MetadataEncoding]))

	var input workflows.PaymentInput
	require.NoError(t, devDataConverter(t, dataDir).FromPayload(payload, &input))
	require.Equal(t, cardToken, input.Intent.CardToken)
	require.Equal(t, key, input.Intent.Key)
}

// webUIRenderer returns a function that renders a page of the Web UI in a
// headless chromium and returns its DOM, or skips the test without one.
func webUIRenderer(t *testing.T) func(page string) string {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium), so the Web UI is not checked")
	}
	return func(page string) string {
		cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir="+t.TempDir(), "--virtual-time-budget=15000", "--dump-dom", page)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), "chromium: %s", errOut.String())
		return out.String()
	}
}

// checkWebUIListsTheWorkflow loads the Web UI's workflow list, filtered by
// order, and the workflow's history page in headless Chromium, and reads the
// rendered pages.
func checkWebUIListsTheWorkflow(t *testing.T, dev *devProcess, orderID, key, runID string) {
	t.Helper()
	render := webUIRenderer(t)

	list := func(query string) string {
		return render(dev.ui + "/namespaces/" + temporalserver.DefaultNamespace + "/workflows?query=" + url.QueryEscape(query))
	}

	dom := list(fmt.Sprintf(`OrderId=%q`, orderID))
	require.Contains(t, dom, key, "the Web UI lists the workflow of order %s", orderID)
	require.Contains(t, dom, "PaymentWorkflow")

	other := list(`OrderId="999999"`)
	require.NotContains(t, other, key, "the search-attribute filter leaves out other orders")

	// The history page shows the workflow's input decoded through the
	// stack's codec endpoint: an operator reads what Temporal stores
	// encrypted.
	history := render(fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", dev.ui, temporalserver.DefaultNamespace, key, runID))
	require.Contains(t, history, cardToken, "the Web UI decodes the input through the codec endpoint")
}

// checkWebUIListsTheSettlementSchedule requires the Web UI's Schedules page
// to list the daily settlement schedule of the first provider, which the
// dev stack's worker creates.
func checkWebUIListsTheSettlementSchedule(t *testing.T, dev *devProcess) {
	t.Helper()
	render := webUIRenderer(t)
	page := dev.ui + "/namespaces/" + temporalserver.DefaultNamespace + "/schedules"
	id := worker.SettlementScheduleID(chargeonce.DefaultProvider)
	require.Eventually(t, func() bool {
		return strings.Contains(render(page), id)
	}, time.Minute, time.Second, "%s lists %s", page, id)
}
