package tests

import (
	"bytes"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/modfile"

	"chargeonce/dev/cluster"
	"chargeonce/verify/chaos"
)

// composeFile is the part of docker-compose.yml the checks below read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

// composeService is one service of docker-compose.yml.
type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]any    `yaml:"depends_on"`
	Deploy      struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
}

// No Docker engine runs where the tests run, so the compose file is checked
// against the code instead: every service has a pinned image or our build,
// every command is a binary of this module that the Dockerfile builds,
// every variable we set is one the binary reads, and every published port is
// the one the binary listens on.
func TestDockerCompose_MatchesTheBinaries(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	var compose composeFile
	require.NoError(t, yaml.Unmarshal(raw, &compose))

	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	versions := moduleVersions(t, root)
	helps := map[string]string{}

	for name, svc := range compose.Services {
		t.Run(name, func(t *testing.T) {
			for _, p := range svc.Ports {
				// The codec decrypts for its token's holder and Temporal's
				// frontend asks nothing: neither is for the network.
				require.True(t, strings.HasPrefix(p, "127.0.0.1:"), "%s publishes %q on every interface of the host; publish it on 127.0.0.1", name, p)
			}
			for _, v := range svc.Volumes {
				if src, _, ok := strings.Cut(v, ":"); ok && strings.HasPrefix(src, "./") {
					_, err := os.Stat(filepath.Join(root, src))
					require.NoError(t, err, "volume source of %s", name)
				}
			}
			for dep := range svc.DependsOn {
				require.Contains(t, compose.Services, dep, "%s depends on an unknown service", name)
			}
			if svc.Build == nil {
				require.NotEmpty(t, svc.Image, "%s has neither image nor build", name)
				require.Regexp(t, `:[0-9][0-9.]*$`, svc.Image, "%s must pin its image version", name)
				checkPinnedVersion(t, svc.Image, versions)
				return
			}

			require.Len(t, svc.Command, 1, "%s runs one of our binaries", name)
			binary := svc.Command[0]
			require.DirExists(t, filepath.Join(root, "cmd", binary), "%s runs %q, which is not a command of the module", name, binary)
			require.Contains(t, string(dockerfile), "./cmd/"+binary, "the Dockerfile does not build %s", binary)

			if _, ok := helps[binary]; !ok {
				helps[binary] = helpOf(t, binary)
			}
			for variable, value := range svc.Environment {
				require.Contains(t, helps[binary], variable, "%s sets %s, which %s does not read", name, variable, binary)
				if strings.HasSuffix(variable, "_LISTEN") || strings.HasSuffix(variable, "_ADDR") {
					port := strings.TrimPrefix(value[strings.LastIndex(value, ":"):], ":")
					require.True(t, publishes(svc.Ports, port), "%s listens on %s but publishes %v", name, port, svc.Ports)
				}
			}
		})
	}
}

func publishes(ports []string, container string) bool {
	for _, p := range ports {
		if strings.HasSuffix(p, ":"+container) {
			return true
		}
	}
	return false
}

// checkPinnedVersion ties the Temporal images to the modules the embedded
// server and UI are built from, so that dev and production run one version.
func checkPinnedVersion(t *testing.T, image string, versions map[string]string) {
	name, tag, _ := strings.Cut(image, ":")
	module := map[string]string{
		"temporalio/server":      "go.temporal.io/server",
		"temporalio/admin-tools": "go.temporal.io/server",
		"temporalio/ui":          "github.com/temporalio/ui-server/v2",
	}[name]
	if module == "" {
		return
	}
	require.Equal(t, versions[module], "v"+tag, "%s should run the version go.mod pins for %s", image, module)
}

func moduleVersions(t *testing.T, root string) map[string]string {
	raw, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	f, err := modfile.Parse("go.mod", raw, nil)
	require.NoError(t, err)
	versions := map[string]string{}
	for _, r := range f.Require {
		versions[r.Mod.Path] = r.Mod.Version
	}
	return versions
}

var envInHelp = regexp.MustCompile(`[A-Z][A-Z0-9_]+`)

// helpOf builds a command and returns the environment variables its --help
// names, one per line.
func helpOf(t *testing.T, binary string) string {
	bin := buildBinary(t, "chargeonce/cmd/"+binary)
	var help bytes.Buffer
	cmd := exec.Command(bin, "--help")
	cmd.Stdout, cmd.Stderr = &help, &help
	require.NoError(t, cmd.Run(), "%s --help: %s", binary, help.String())
	return strings.Join(envInHelp.FindAllString(help.String(), -1), "\n")
}

func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs("..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, "go.mod"))
	return dir
}

// The local cluster (go run ./dev/cmd/cluster) runs what docker-compose.yml
// declares, so that what runs here is what users deploy: the same services
// and replicas, the same versions, the same commands, and the same
// environment variables with the same values, apart from where each part
// listens and finds the others.
func TestDockerCompose_DeclaresWhatTheClusterRuns(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	var compose composeFile
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	versions := moduleVersions(t, root)

	parts := cluster.Parts(cluster.DefaultPorts(), cluster.Layout{}, cluster.Secrets{CodecKeys: "k1:key", CodecToken: "token", WebhookSecret: "whsec_test"})
	declared := make([]string, 0, len(parts))
	for _, part := range parts {
		declared = append(declared, part.Service)
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(compose.Services)), declared, "compose and the cluster declare other services")

	for _, part := range parts {
		t.Run(part.Service, func(t *testing.T) {
			svc := compose.Services[part.Service]
			require.Equal(t, part.Replicas, max(svc.Deploy.Replicas, 1), "replicas")
			require.Equal(t, part.Entrypoint, svc.Entrypoint, "entrypoint")
			if svc.Command != nil {
				require.Equal(t, part.Command, svc.Command, "command")
			}
			if svc.Build != nil {
				require.Equal(t, "chargeonce/cmd/"+svc.Command[0], part.Package, "the cluster builds the command compose runs")
			}
			if name, tag, _ := strings.Cut(svc.Image, ":"); name == "postgres" {
				require.Equal(t, cluster.PostgresVersion, tag, "the cluster runs Debian's PostgreSQL %s", cluster.PostgresVersion)
			} else if svc.Image != "" {
				module, _, _ := strings.Cut(part.Package, "/cmd/")
				require.Equal(t, versions[module], "v"+tag, "%s runs %s, the cluster builds %s at go.mod's %s", part.Service, svc.Image, part.Package, versions[module])
			}

			require.ElementsMatch(t, slices.Collect(maps.Keys(svc.Environment)), slices.Collect(maps.Keys(part.Env)), "environment variables")
			for name, value := range svc.Environment {
				if !placement(value, compose.Services) {
					require.Equal(t, value, part.Env[name], "%s", name)
				}
			}
			for name := range part.Local {
				require.NotContains(t, svc.Environment, name, "a variable compose sets belongs in Env, not Local")
			}
		})
	}
}

// placement reports whether a compose value says where a part listens or
// finds another, which differs on one machine: an address, a port, a URL, a
// service's host name, or a value compose takes from the user.
func placement(value string, services map[string]composeService) bool {
	if _, ok := services[value]; ok {
		return true
	}
	if _, err := strconv.Atoi(value); err == nil {
		return true
	}
	return strings.Contains(value, ":") || strings.HasPrefix(value, "${") || net.ParseIP(value) != nil
}

// The cluster names the variables of its binaries after their flags
// (cli.EnvName), and so do the chaos runs for the services they tune
// (chaos.Env): a misspelt flag would name a variable that no binary reads,
// and its setting would be lost without a word. Compose's variables are
// checked above; these are the ones only the cluster sets.
func TestClusterEnv_EveryVariableIsOneTheBinaryReads(t *testing.T) {
	parts := cluster.Parts(cluster.DefaultPorts(), cluster.Layout{Dir: "/data"}, cluster.Secrets{CodecKeys: "k1:key", CodecToken: "token", WebhookSecret: "whsec_test"})
	runEnv := chaos.Env(chaos.DefaultConfig())
	tuned := 0
	for _, part := range parts {
		binary, ours := strings.CutPrefix(part.Package, "chargeonce/cmd/")
		if !ours {
			continue
		}
		t.Run(part.Service, func(t *testing.T) {
			help := helpOf(t, binary)
			names := slices.Concat(slices.Collect(maps.Keys(part.Local)), slices.Collect(maps.Keys(runEnv[part.Service])))
			for _, name := range names {
				require.Contains(t, strings.Fields(help), name, "the cluster gives %s the variable %s, which it does not read", binary, name)
			}
		})
		if runEnv[part.Service] != nil {
			tuned++
		}
	}
	require.Len(t, runEnv, tuned, "a chaos run tunes a service the cluster does not build")
}
