// Command chaos runs the fault-injection run (package chaos) and prints its
// summary. It exits 1 when any promise was broken, so that a soak run can
// gate a release:
//
//	go run ./verify/cmd/chaos --checkouts 2000 --worker-kills 10 --server-restarts 3
//
// With --database-url the merchant database runs on PostgreSQL, in a fresh
// database created for the run, and the PostgreSQL server is restarted
// during it (--postgres-restarts, which needs the right to restart it):
//
//	go run ./verify/cmd/chaos --database-url postgres://chargeonce:chargeonce@127.0.0.1:5432/chargeonce
//
// With --cluster it runs against the local cluster (go run ./dev/cmd/cluster),
// started in that directory for the run, and the faults are real process
// faults: workers and API instances killed with SIGKILL, the Temporal server
// killed and started again, PostgreSQL restarted:
//
//	go run ./verify/cmd/chaos --cluster /tmp/chaos-cluster --api-kills 2 --postgres-restarts 1
//
// It must run from inside the module, because it builds the worker command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"chargeonce/internal/cli"
	"chargeonce/verify/chaos"
)

func main() {
	cli.Run("chaos", run)
}

// errBroken reports a run that broke a promise; the summary says which.
var errBroken = errors.New("the run broke a promise; see the summary above")

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := chaos.DefaultConfig()
	fs.IntVar(&cfg.Checkouts, "checkouts", cfg.Checkouts, "orders to create and pay")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "customers checking out at once")
	fs.IntVar(&cfg.WorkerKills, "worker-kills", cfg.WorkerKills, "times a worker process is killed with SIGKILL")
	fs.IntVar(&cfg.ServerRestarts, "server-restarts", cfg.ServerRestarts, "times the Temporal server is restarted")
	fs.IntVar(&cfg.ModeSwitches, "mode-switches", cfg.ModeSwitches, "times the provider's chaos mode changes")
	fs.Float64Var(&cfg.LostStarts, "lost-starts", cfg.LostStarts, "share of checkouts whose workflow start is lost after the key is stored")
	fs.IntVar(&cfg.LateRetries, "late-retries", cfg.LateRetries, "orders retried after their key's retention")
	fs.IntVar(&cfg.WebhookSwitches, "webhook-switches", cfg.WebhookSwitches, "times the webhook chaos of the provider's events changes (delay, drops, duplicates, reordering)")
	fs.IntVar(&cfg.LateCharges, "late-charges", cfg.LateCharges, "late charges of each order of arrival planted for abandoned attempts: before the customer pays again (adopted) and after (refunded)")
	fs.IntVar(&cfg.ForgedEvents, "forged-events", cfg.ForgedEvents, "forged events posted to the API, each of which must be refused")
	fs.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL `URL` whose role (with CREATEDB) hosts a fresh merchant database for the run (default: SQLite in the data directory)")
	fs.IntVar(&cfg.PostgresRestarts, "postgres-restarts", 1, "times the PostgreSQL server is restarted; only with --database-url")
	restartCommand := fs.String("postgres-restart-command", "", "`command` that restarts PostgreSQL and returns once it accepts connections, split at spaces (default: pg_ctlcluster VERSION main restart, with the newest installed VERSION)")
	fs.DurationVar(&cfg.Retention, "retention", chaos.DefaultRetention, "the provider's key retention; must exceed the abandon deadline")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the customers' choices and the provider's chance")
	fs.StringVar(&cfg.ProviderAPI, "provider-api", "", "`API` the workers speak to the fake provider: ietf (default) or stripe")
	fs.BoolVar(&cfg.Backup, "backup", false, "run a second fake provider, the backup, which the payments move to when the first charged nothing; the mode switches then break the first alone, and both at once for a part of the run")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "keep the databases and the worker logs here (default: a temporary directory, removed)")
	stackLog := fs.String("stack-log", "", "write the stack's logs to this `file` (default: discarded)")
	clusterDir := fs.String("cluster", "", "run against the local cluster, started in this data `directory` for the run, with real process faults")
	fs.IntVar(&cfg.APIKills, "api-kills", 0, "times an API instance is killed with SIGKILL in the middle of checkouts; only with --cluster")
	logFlags := cli.Logging(fs)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	// A run on SQLite has no PostgreSQL to restart; asking for restarts
	// there is an error Validate reports.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if cfg.DatabaseURL == "" && *clusterDir == "" && !given["postgres-restarts"] {
		cfg.PostgresRestarts = 0
	}
	cfg.PostgresRestartCommand = strings.Fields(*restartCommand)
	logger, err := logFlags.Logger(stderr)
	if err != nil {
		return err
	}
	if *stackLog != "" {
		f, err := os.Create(*stackLog)
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("--stack-log: %w", err)}
		}
		defer f.Close()
		cfg.StackLogs = f
	}
	cfg.Logger = logger
	if *clusterDir != "" {
		if cfg.DatabaseURL != "" {
			return cli.UsageError{Err: errors.New("--cluster runs its own PostgreSQL; leave --database-url out")}
		}
		sum, err := chaos.RunOnCluster(ctx, cfg, *clusterDir)
		return report(stdout, sum, err)
	}
	if cfg.APIKills > 0 {
		return cli.UsageError{Err: errors.New("--api-kills needs --cluster: the embedded stack's API runs in this process")}
	}
	if err := cfg.Validate(); err != nil {
		return cli.UsageError{Err: err}
	}
	build, err := os.MkdirTemp("", "chargeonce-chaos-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(build)
	logger.Info("building the worker", "package", chaos.WorkerPackage)
	if cfg.WorkerBinary, err = chaos.BuildWorker(ctx, build); err != nil {
		return err
	}
	sum, err := chaos.Run(ctx, cfg)
	return report(stdout, sum, err)
}

// report prints a run's summary and says whether it kept every promise.
func report(stdout io.Writer, sum chaos.Summary, err error) error {
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, sum)
	if !sum.OK() {
		return errBroken
	}
	return nil
}
