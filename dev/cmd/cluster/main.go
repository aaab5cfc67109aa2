// Command cluster runs chargeonce in its production shape on this machine,
// every part its own process with its own log (package cluster): PostgreSQL,
// the Temporal server and its Web UI, two workers, two checkout APIs and the
// fake provider, the same services docker-compose.yml declares.
//
//	go run ./dev/cmd/cluster
//
// Ctrl-C stops every part cleanly; started again on the same --data-dir, it
// finds its orders, workflows and payload key.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"chargeonce"
	"chargeonce/api"
	"chargeonce/dev/cluster"
	"chargeonce/internal/cli"
)

func main() {
	cli.Run("cluster", run)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", ".chargeonce-cluster", "`directory` of PostgreSQL's data, the binaries, the logs and the payload key")
	freePorts := fs.Bool("free-ports", false, "use unused loopback ports instead of the ones docker-compose.yml publishes")
	logFlags := cli.Logging(fs)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	logger, err := logFlags.Logger(stderr)
	if err != nil {
		return err
	}
	ports := cluster.DefaultPorts()
	if *freePorts {
		if ports, err = cluster.FreePorts(); err != nil {
			return err
		}
	}
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: *dataDir, Ports: ports, Logger: logger})
	if err != nil {
		return err
	}
	printBanner(stdout, c, time.Since(began))

	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping…")
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := c.Stop(stopCtx); err != nil {
		return err
	}
	logger.Info("every part stopped", slog.String("data_dir", c.Layout().Dir))
	return nil
}

func printBanner(w io.Writer, c *cluster.Cluster, took time.Duration) {
	fmt.Fprintf(w, "\nchargeonce cluster is up (%.1fs), data in %s\n", took.Seconds(), c.Layout().Dir)
	for i, u := range c.APIURLs() {
		fmt.Fprintf(w, "  checkout API %d   %s\n", i+1, u)
	}
	fmt.Fprintf(w, "  Temporal Web UI  %s/namespaces/%s/workflows\n", c.UIURL(), cluster.Namespace)
	fmt.Fprintf(w, "  Temporal         %s (namespace %s, on PostgreSQL, mutual TLS for server name %s)\n", c.TemporalAddress(), cluster.Namespace, cluster.TemporalServerName)
	fmt.Fprintf(w, "  certificates     %s (CA ca.pem; tools.pem with tools-key.pem for your own clients), new at every start\n", c.Layout().TLS())
	fmt.Fprintf(w, "  PostgreSQL       %s\n", c.DatabaseURL())
	fmt.Fprintf(w, "  fake provider    %s\n", c.ProviderURL())
	fmt.Fprintf(w, "  provider events  %s%s (and the legacy %s), signed with the secret kept in %s\n",
		c.APIURLs()[0], api.ProviderWebhookPath(chargeonce.DefaultProvider), api.WebhookPath, c.Layout().WebhookSecretFile())
	for i, u := range c.WorkerURLs() {
		fmt.Fprintf(w, "  worker %d         %s (/healthz, /metrics, /codec for the token in %s)\n", i+1, u, c.Layout().CodecTokenFile())
	}
	fmt.Fprintf(w, "  logs             %s\n", c.Layout().Logs())
	fmt.Fprintf(w, "  payload key      %s; keep it, or workflow payloads cannot be read\n", c.Layout().CodecKeyFile())
	fmt.Fprintf(w, "  API key          every scope, in %s\n", c.Layout().APIKeyFile())
	fmt.Fprintf(w, "\nTry, in another terminal:\n  %s=$(cat %s) go run ./starter checkout --api %s --amount 548.90 --currency TRY --card tok_visa\n",
		cli.EnvName("api-key"), c.Layout().APIKeyFile(), c.APIURLs()[0])
	fmt.Fprintf(w, "Ctrl-C stops everything.\n\n")
}
