package tests

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The README's transcripts are its promise to a newcomer, so they run.
//
// The convention, which TestReadme_RunsAsWritten holds:
//   - A ```console block is a transcript: a line starting with "$ " is a
//     command (a line ending in "\" continues on the next), the lines up to
//     the next command are its output, stdout and stderr as a terminal
//     shows them. Every console block runs, in README order, in one bash,
//     so that variables carry from block to block as in a reader's
//     terminal, against one dev stack.
//   - A ```text dev-terminal block shows lines of the terminal that runs
//     `go run ./dev`, such as the dev receiver's line per event: they must
//     appear there, in this order, among others, within a minute of the
//     commands before the block.
//   - An output line that is "…" alone stands for any number of lines; "…"
//     inside a line stands for any text within it. UUIDs, 32-digit hex
//     references, times, dates, message ids and durations with a fraction
//     (measured ones) are compared as their shapes, since they differ on
//     every run; every other character counts.
//   - ```sh blocks are shown, not run. They hold what this test cannot run
//     on its one stack: the long-running servers themselves (`go run ./dev`
//     and its Stripe-dialect twin, the cluster, docker compose), Stripe with
//     real keys, Temporal Cloud, the benchmarks and chaos runs (tests of
//     their own), `make test` itself, and commands against a database or
//     Temporal of the reader's. A transcript, a line starting with "$ ", is
//     allowed in console blocks only.
//
// The walkthrough's stack is the one the README's scenarios start: the
// flags of its `go run ./dev …` line. Its first checkout, shown before that
// line, is a plain 201 that no timing flag changes. The variables the README
// sets at the top of the walkthrough (API, PROVIDER) are set to the stack's
// real addresses instead of the README's defaults, and `go run ./starter`
// runs the starter built once for the test, so that no command compiles.

// readmeDevLine is the section whose `go run ./dev …` line starts the stack
// the walkthrough runs on.
const readmeDevSection = "## The scenarios, step by step"

// readmeStep is one command of a console block and the output the README
// shows for it.
type readmeStep struct {
	line    int // in README.md, of the command
	command string
	want    []string
}

type readmeBlock struct {
	line    int // of the opening fence
	heading string
	steps   []readmeStep
	// devTerminal marks a ```text dev-terminal block: lines that the
	// terminal running `go run ./dev` shows by now, in this order, among
	// others. It has one step, with no command.
	devTerminal bool
}

// readmeDoc is what the test reads from the README.
type readmeDoc struct {
	blocks  []readmeBlock
	devArgs []string
	// problems are violations of the convention, reported before anything
	// runs.
	problems []string
}

var readmeVariable = regexp.MustCompile(`^(API|PROVIDER)=\S+$`)

func parseReadme(text string) readmeDoc {
	var doc readmeDoc
	heading, section := "", ""
	var fence string // the open fence's info string; "" outside a block
	var block *readmeBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line, n := lines[i], i+1
		if fence == "" {
			if info, ok := strings.CutPrefix(line, "```"); ok {
				fence = strings.TrimSpace(info)
				if fence == "" {
					fence = "plain"
				}
				switch fence {
				case "console":
					block = &readmeBlock{line: n, heading: heading}
				case "text dev-terminal":
					block = &readmeBlock{line: n, heading: heading, devTerminal: true, steps: []readmeStep{{line: n}}}
				}
				continue
			}
			if strings.HasPrefix(line, "#") {
				heading = line
				if strings.HasPrefix(line, "## ") {
					section = line
				}
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			if block != nil {
				doc.blocks = append(doc.blocks, *block)
				block = nil
			}
			fence = ""
			continue
		}
		if block == nil {
			if strings.HasPrefix(line, "$ ") {
				doc.problems = append(doc.problems, fmt.Sprintf("README.md:%d: a transcript in a ```%s block, which does not run; make it ```console", n, fence))
			}
			if args, ok := strings.CutPrefix(line, "go run ./dev "); ok && fence == "sh" && section == readmeDevSection && doc.devArgs == nil {
				doc.devArgs = strings.Fields(strings.SplitN(args, "#", 2)[0])
			}
			continue
		}
		if cmd, ok := strings.CutPrefix(line, "$ "); ok && !block.devTerminal {
			for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
			}
			if !readmeVariable.MatchString(cmd) && (strings.Contains(cmd, ":8080") || strings.Contains(cmd, ":8099") || strings.Contains(cmd, "localhost")) {
				doc.problems = append(doc.problems, fmt.Sprintf("README.md:%d: a command names a port or host of its own; use $API or $PROVIDER", n))
			}
			block.steps = append(block.steps, readmeStep{line: n, command: cmd})
			continue
		}
		if len(block.steps) == 0 {
			doc.problems = append(doc.problems, fmt.Sprintf("README.md:%d: output before the block's first command", n))
			continue
		}
		step := &block.steps[len(block.steps)-1]
		step.want = append(step.want, line)
	}
	return doc
}

// readmeShapes are replaced by their names before lines are compared.
var readmeShapes = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
	{regexp.MustCompile(`[0-9a-f]{32}`), "<hex>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d`), "<date>"},
	{regexp.MustCompile(`msg_[0-9A-Z]{26}`), "msg_<id>"},
	// Measured durations, such as a timeout's 2.7s or 2.8s.
	{regexp.MustCompile(`\b\d+\.\d+m?s\b`), "<duration>"},
}

func readmeNormalize(line string) string {
	line = strings.TrimRight(line, " \t\r")
	for _, s := range readmeShapes {
		line = s.re.ReplaceAllString(line, s.name)
	}
	return line
}

// readmeMatch reports whether got is what want shows, "…" lines and "…"
// within lines included.
func readmeMatch(want, got []string) bool {
	patterns := make([]*regexp.Regexp, len(want))
	for i, w := range want {
		parts := strings.Split(readmeNormalize(w), "…")
		for j, p := range parts {
			parts[j] = regexp.QuoteMeta(p)
		}
		patterns[i] = regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
	}
	norm := make([]string, len(got))
	for i, g := range got {
		norm[i] = readmeNormalize(g)
	}
	memo := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var ok bool
		switch {
		case i == len(want):
			ok = j == len(norm)
		case strings.TrimSpace(want[i]) == "…":
			ok = match(i+1, j) || (j < len(norm) && match(i, j+1))
		default:
			ok = j < len(norm) && patterns[i].MatchString(norm[j]) && match(i+1, j+1)
		}
		memo[key] = ok
		return ok
	}
	return match(0, 0)
}

func TestReadme_ParsesTheConvention(t *testing.T) {
	doc := parseReadme("# t\n## A\n```console\n$ echo a \\\n    b\na b\n$ true\n```\n```sh\n$ echo no\n```\n")
	require.Len(t, doc.blocks, 1)
	require.Equal(t, []readmeStep{{line: 4, command: "echo a \\\n    b", want: []string{"a b"}}, {line: 7, command: "true"}}, doc.blocks[0].steps)
	require.Equal(t, []string{"README.md:10: a transcript in a ```sh block, which does not run; make it ```console"}, doc.problems)

	devTerminal := parseReadme("```text dev-terminal\n$ not a command\nevent x\n```\n")
	require.Equal(t, []readmeBlock{{line: 1, devTerminal: true, steps: []readmeStep{{line: 1, want: []string{"$ not a command", "event x"}}}}}, devTerminal.blocks)

	require.Equal(t, []string{"README.md:3: a command names a port or host of its own; use $API or $PROVIDER"},
		parseReadme("```console\n$ echo a\n$ curl localhost:8080/x\n```\n").problems)

	require.True(t, readmeMatch([]string{"key 01a22b83-2a17-7017-be92-b07d3c754fef", "…", "paid ch_…"},
		[]string{"key 01a23f00-0000-7000-8000-000000000000", "attempt 1", "attempt 2", "paid ch_000004"}))
	require.True(t, readmeMatch([]string{"a", "…", "b"}, []string{"a", "b"}))
	require.False(t, readmeMatch([]string{"attempt 4  201 replayed"}, []string{"attempt 5  201 replayed"}))
	require.False(t, readmeMatch([]string{"a"}, []string{"a", "b"}), "a line the README lacks")
	require.False(t, readmeMatch([]string{"a", "b"}, []string{"a"}), "a line the output lacks")
}

func TestReadme_RunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's walkthrough against the dev binary")
	}
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	doc := parseReadme(string(raw))
	require.Empty(t, doc.problems, "the README breaks the console convention")
	require.NotEmpty(t, doc.devArgs, "no `go run ./dev …` line in a sh block of %q", readmeDevSection)
	require.NotEmpty(t, doc.blocks)

	for _, tool := range []string{"bash", "curl", "jq"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the README's commands need %s (.ci/run installs it)", tool)
	}
	devBin := buildBinary(t, "chargeonce/dev")
	starterBin := buildBinary(t, "chargeonce/starter")
	work := t.TempDir()
	dev := startDev(t, devBin, filepath.Join(work, ".chargeonce"), doc.devArgs...)
	defer dev.stop(t)

	sh := startReadmeShell(t, work, starterBin)
	for _, block := range doc.blocks {
		if block.devTerminal {
			checkDevTerminal(t, dev, block)
			continue
		}
		for _, step := range block.steps {
			command := step.command
			if m := readmeVariable.FindStringSubmatch(command); m != nil {
				command = m[1] + "=" + map[string]string{"API": dev.api, "PROVIDER": dev.provider}[m[1]]
			}
			got := sh.run(t, command, 5*time.Minute)
			if !readmeMatch(step.want, got) {
				t.Errorf("README.md:%d, in the console block under %q (README.md:%d):\n$ %s\n%s",
					step.line, block.heading, block.line, step.command, readmeDiff(step.want, got))
			}
		}
	}
}

// checkDevTerminal waits until dev's output holds the block's lines in
// order, as the events a dispatcher delivers arrive when they arrive.
func checkDevTerminal(t *testing.T, dev *devProcess, block readmeBlock) {
	t.Helper()
	want := []string{"…"}
	for _, w := range block.steps[0].want {
		want = append(want, w, "…")
	}
	var got []string
	deadline := time.Now().Add(time.Minute)
	for {
		got = strings.Split(strings.TrimSuffix(dev.stdout.String(), "\n"), "\n")
		if readmeMatch(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("README.md:%d, the dev terminal's lines under %q are not all in dev's output, in order, within a minute:\n%s",
				block.line, block.heading, readmeDiff(block.steps[0].want, got))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readmeDiff shows the README's lines and the output's, each prefixed.
func readmeDiff(want, got []string) string {
	var b strings.Builder
	b.WriteString("--- the README shows\n")
	for _, w := range want {
		b.WriteString("- " + w + "\n")
	}
	b.WriteString("+++ the command printed\n")
	for _, g := range got {
		b.WriteString("+ " + g + "\n")
	}
	return b.String()
}

// readmeShell is one bash that runs the README's commands in turn, as a
// reader's terminal would.
type readmeShell struct {
	stdin    io.WriteCloser
	lines    chan string
	sentinel string
}

func startReadmeShell(t *testing.T, dir, starterBin string) *readmeShell {
	t.Helper()
	// `go run ./starter …` runs the starter built for the test; any other go
	// command in a console block is refused, since it would not be tested
	// as the reader runs it.
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	wrapper := "#!/bin/sh\nif [ \"$1\" = run ] && [ \"$2\" = ./starter ]; then shift 2; exec " + starterBin + " \"$@\"; fi\n" +
		"echo \"README test: console blocks run only 'go run ./starter', not: go $*\" >&2\nexit 127\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755))

	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = dir
	// Nothing of the test's environment reaches the commands but what a
	// reader's shell has: no CHARGEONCE_* variable of the test run.
	cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8", "TZ=UTC"}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = w, w
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	require.NoError(t, w.Close())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = r.Close()
	})
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	s := &readmeShell{stdin: stdin, lines: make(chan string, 1024), sentinel: "readme-done-" + hex.EncodeToString(nonce)}
	go func() {
		defer close(s.lines)
		scanner := bufio.NewScanner(r)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for scanner.Scan() {
			s.lines <- scanner.Text()
		}
	}()
	return s
}

// run runs one command and returns its output lines. The exit status is
// kept for the next command's $?, as in a terminal.
func (s *readmeShell) run(t *testing.T, command string, timeout time.Duration) []string {
	t.Helper()
	_, err := fmt.Fprintf(s.stdin, "{ %s\n} </dev/null\nreadme_rc=$?; echo %s; (exit $readme_rc)\n", command, s.sentinel)
	require.NoError(t, err)
	var out []string
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("bash exited during\n$ %s\n%s", command, strings.Join(out, "\n"))
			}
			if before, found := strings.CutSuffix(line, s.sentinel); found {
				// Output without a final newline, as curl -s prints JSON,
				// ends on the sentinel's line.
				if before != "" {
					out = append(out, before)
				}
				return out
			}
			out = append(out, line)
		case <-deadline:
			t.Fatalf("no end within %v of\n$ %s\n%s", timeout, command, strings.Join(out, "\n"))
		}
	}
}
