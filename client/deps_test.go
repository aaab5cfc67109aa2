package client_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A merchant's backend that links the client links nothing of the server:
// the standard library, the wire types, the Idempotency-Key header's wire
// form (idemkey, with its Structured Field codec) and a UUID generator.
func TestClient_LinksNothingOfTheServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "chargeonce/client").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.ElementsMatch(t, []string{"chargeonce/client", "chargeonce/api/wire", "chargeonce/internal/idemkey", "github.com/dunglas/httpsfv", "github.com/google/uuid"}, deps)
}
