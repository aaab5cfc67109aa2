package tests

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// binaries are the commands the tests run as processes, each built once per
// run of the test binary into one directory: linking a binary that embeds
// the Temporal server costs several seconds of CPU, and many tests run the
// same few commands.
var binaries = struct {
	mu    sync.Mutex
	dir   string
	built map[string]*builtBinary
}{built: map[string]*builtBinary{}}

// builtBinary is one command's build, done by the first test that needs it;
// the others wait for it and share its outcome.
type builtBinary struct {
	pkg  string
	once sync.Once
	path string
	err  error
}

// TestMain removes the binaries when every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// buildBinary returns a command of this module (or of one it requires),
// built once for every test, by the package's last path element. Tests
// share the file, so none may change it.
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	return buildBinaryAs(t, pkg, filepath.Base(pkg))
}

// buildBinaryAs is buildBinary with the binary's file name given, for
// commands whose package's last element is not the name they are run by.
func buildBinaryAs(t *testing.T, pkg, name string) string {
	t.Helper()
	b, err := binaryEntry(pkg, name)
	require.NoError(t, err)
	b.once.Do(func() {
		b.path = filepath.Join(binaries.dir, name)
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %w: %s", pkg, err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// binaryEntry returns the build of pkg into the binary called name, making
// the shared directory on first use.
func binaryEntry(pkg, name string) (*builtBinary, error) {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "chargeonce-tests-bin-")
		if err != nil {
			return nil, err
		}
		binaries.dir = dir
	}
	b, ok := binaries.built[name]
	if !ok {
		b = &builtBinary{pkg: pkg}
		binaries.built[name] = b
	}
	if b.pkg != pkg {
		return nil, fmt.Errorf("the binary %s is built from %s, not %s", name, b.pkg, pkg)
	}
	return b, nil
}

// copyBinary copies a shared binary to path, for a harness that builds
// into a directory of its own: `go build -o path` finds the copy up to date
// and links nothing.
func copyBinary(t *testing.T, bin, path string) {
	t.Helper()
	src, err := os.Open(bin)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}
