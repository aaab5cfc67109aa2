package chargeonce_test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The folders that never ship in the product image: the README's layout
// table draws the line above them.
var notShipped = []string{"dev", "verify", "tests"}

// imageCommands are the packages the Dockerfile builds into the image.
var imageCommands = regexp.MustCompile(`\./(cmd/[a-z-]+|starter)\b`)

type listedPackage struct {
	ImportPath string
	Name       string
	Deps       []string
}

// goList lists the module's packages with their dependencies.
func goList(t *testing.T, patterns ...string) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps=false", "-json=ImportPath,Name,Deps"}, patterns...)...).Output()
	require.NoError(t, err, "go list")
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayout_ThePathSaysWhatShips holds the README's layout rule: the image's
// commands link nothing under dev/, verify/ or tests/, so a package's path
// alone tells a reader whether it can be in the product image.
func TestLayout_ThePathSaysWhatShips(t *testing.T) {
	dockerfile, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	var commands []string
	for _, m := range imageCommands.FindAllStringSubmatch(string(dockerfile), -1) {
		commands = append(commands, "./"+m[1])
	}
	require.Contains(t, commands, "./cmd/api", "the Dockerfile's build line was not found")
	for _, p := range goList(t, commands...) {
		for _, dep := range append(p.Deps, p.ImportPath) {
			rel, ok := strings.CutPrefix(dep, "chargeonce/")
			if !ok {
				continue
			}
			top, _, _ := strings.Cut(rel, "/")
			require.NotContains(t, notShipped, top, "%s is in the product image but links %s", p.ImportPath, dep)
		}
	}
}

// TestLayout_EveryCommandIsWhereTheRuleSays holds the README's rule for main
// packages: each is cmd/<command> under its group, or one of the two roots a
// newcomer runs first.
func TestLayout_EveryCommandIsWhereTheRuleSays(t *testing.T) {
	roots := []string{"chargeonce/dev", "chargeonce/starter"}
	for _, p := range goList(t, "./...") {
		if p.Name != "main" || slices.Contains(roots, p.ImportPath) {
			continue
		}
		dir := path.Dir(p.ImportPath)
		require.Truef(t, path.Base(dir) == "cmd", "main package %s is not in a cmd/ folder", p.ImportPath)
		require.Contains(t, []string{"chargeonce/cmd", "chargeonce/dev/cmd", "chargeonce/verify/cmd"}, dir,
			"main package %s: commands live in cmd/, dev/cmd/ or verify/cmd/", p.ImportPath)
	}
}

// TestLayout_TheReadmeListsEveryTopFolder keeps the layout table whole: a
// top-level folder with Go code that the table does not name is a part no
// newcomer can place.
func TestLayout_TheReadmeListsEveryTopFolder(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(readme), "\n## Layout\n")
	require.True(t, ok, "README.md has no Layout section")
	table, _, _ = strings.Cut(table, "\n## ")
	tops := map[string]bool{}
	for _, p := range goList(t, "./...") {
		if rel, ok := strings.CutPrefix(p.ImportPath, "chargeonce/"); ok {
			top, _, _ := strings.Cut(rel, "/")
			tops[top] = true
		}
	}
	for top := range tops {
		require.Containsf(t, table, "| `"+top+"/`", "the README's layout table does not list %s/", top)
	}
	// 19 since docs/ embeds the OpenAPI document (package docs), notify/
	// sends the merchant's events, client/ is the merchants' Go client and
	// hold/ is the service of manual captures, beside refund/.
	require.LessOrEqual(t, len(tops), 19, "top-level folders with Go code")
}
