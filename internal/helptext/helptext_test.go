package helptext_test

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/helptext"
)

func TestFaults_FindsSingleDashesAndDefaultsSaidTwice(t *testing.T) {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.Duration("checkout-budget", 0, "how long a checkout waits (default: charge budget + 2s)")
	fs.Int("api-port", 8080, "checkout API `port`")
	out := new(bytes.Buffer)
	fs.SetOutput(out)
	fs.PrintDefaults() // the flag package's own help: single dashes
	require.Len(t, helptext.Faults(out.String()), 2, "%s", out)

	require.Len(t, helptext.Faults("  --checkout-budget duration\n    \thow long (default: charge budget + 2s) (default \"0s\")\n  --api-port int\n"), 1)
	require.Empty(t, helptext.Faults("  --api-port port\n    \tcheckout API port (default \"8080\")\n  --json\n    \tprint JSON\n"))
}
