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

// The transcripts of the README and of its walkthrough are their promise to
// a newcomer, so they run.
//
// The convention, which TestReadme_RunsAsWritten holds:
//   - readmeDocuments are read in turn, as a newcomer reads them: the
//     README, then the walkthrough it leads to.
//   - A ```console block is a transcript: a line starting with "$ " is a
//     command (a line ending in "\" continues on the next), the lines up to
//     the next command are its output, stdout and stderr as a terminal
//     shows them. Every console block runs, in the documents' order, in one
//     bash, so that variables carry from block to block and from section to
//     section as in a reader's terminal, against one dev stack. Each section
//     (a "#" heading of any level) that holds a block is a subtest named
//     after its title, so that a failure names its section.
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
// The stack is the one the walkthrough's scenarios start: the flags of the
// `go run ./dev …` line in its section readmeDevSection. The README's
// checkouts, shown before that line, are a plain 201, the slow provider's
// replay and a failover to the backup provider, which no timing flag
// changes. The variables the README sets first
// (API, PROVIDER, BACKUP) are set to the stack's real addresses instead of the
// README's defaults. `go run ./starter …` is the real `go run`, of the
// module the test runs in, with the test's Go caches and the reader's
// current directory: its outputs are a reader's, the `exit status N` line
// and the exit status 1 that `go run` gives for any failure included. Any
// other go command in a console block is refused.

// readmeDocuments are the documents whose transcripts run, in the order a
// newcomer reads them, relative to the repository's root.
var readmeDocuments = []string{"README.md", "docs/walkthrough.md"}

// readmeDevSection is the section whose `go run ./dev …` line starts the
// stack the transcripts run on.
const readmeDevSection = "## The stack for the scenarios"

// readmeStep is one command of a console block and the output the document
// shows for it.
type readmeStep struct {
	line    int // in the document, of the command
	command string
	want    []string
}

type readmeBlock struct {
	line  int // of the opening fence
	steps []readmeStep
	// devTerminal marks a ```text dev-terminal block: lines that the
	// terminal running `go run ./dev` shows by now, in this order, among
	// others. It has one step, with no command.
	devTerminal bool
}

// readmeSection is a heading's blocks; it runs as a subtest named after the
// heading's title.
type readmeSection struct {
	file    string
	heading string // the heading's line, "#"s included
	blocks  []readmeBlock
}

func (s readmeSection) title() string { return strings.TrimSpace(strings.TrimLeft(s.heading, "#")) }

// readmeDoc is what the test reads from the documents.
type readmeDoc struct {
	sections []readmeSection
	devArgs  []string
	// problems are violations of the convention, reported before anything
	// runs.
	problems []string
}

var readmeVariable = regexp.MustCompile(`^(API|PROVIDER|BACKUP)=\S+$`)

// parse adds the sections of the document file, whose text is text, and
// what else it finds, to doc.
func (doc *readmeDoc) parse(file, text string) {
	heading := ""
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
					block = &readmeBlock{line: n}
				case "text dev-terminal":
					block = &readmeBlock{line: n, devTerminal: true, steps: []readmeStep{{line: n}}}
				}
				continue
			}
			if strings.HasPrefix(line, "#") {
				heading = line
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			if block != nil {
				doc.add(file, heading, *block)
				block = nil
			}
			fence = ""
			continue
		}
		if block == nil {
			if strings.HasPrefix(line, "$ ") {
				doc.problems = append(doc.problems, fmt.Sprintf("%s:%d: a transcript in a ```%s block, which does not run; make it ```console", file, n, fence))
			}
			if args, ok := strings.CutPrefix(line, "go run ./dev "); ok && fence == "sh" && heading == readmeDevSection && doc.devArgs == nil {
				doc.devArgs = strings.Fields(strings.SplitN(args, "#", 2)[0])
			}
			continue
		}
		if cmd, ok := strings.CutPrefix(line, "$ "); ok && !block.devTerminal {
			for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
			}
			if !readmeVariable.MatchString(cmd) && (strings.Contains(cmd, ":8080") || strings.Contains(cmd, ":8099") || strings.Contains(cmd, ":8098") || strings.Contains(cmd, "localhost")) {
				doc.problems = append(doc.problems, fmt.Sprintf("%s:%d: a command names a port or host of its own; use $API, $PROVIDER or $BACKUP", file, n))
			}
			block.steps = append(block.steps, readmeStep{line: n, command: cmd})
			continue
		}
		if len(block.steps) == 0 {
			doc.problems = append(doc.problems, fmt.Sprintf("%s:%d: output before the block's first command", file, n))
			continue
		}
		step := &block.steps[len(block.steps)-1]
		step.want = append(step.want, line)
	}
}

// add puts block into its section, the last one when the block is under
// the same heading.
func (doc *readmeDoc) add(file, heading string, block readmeBlock) {
	if last := len(doc.sections) - 1; last >= 0 && doc.sections[last].file == file && doc.sections[last].heading == heading {
		doc.sections[last].blocks = append(doc.sections[last].blocks, block)
		return
	}
	doc.sections = append(doc.sections, readmeSection{file: file, heading: heading, blocks: []readmeBlock{block}})
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
	var doc readmeDoc
	doc.parse("README.md", "# t\n## A\n```console\n$ echo a \\\n    b\na b\n$ true\n```\n```sh\n$ echo no\n```\n")
	require.Len(t, doc.sections, 1)
	require.Equal(t, "A", doc.sections[0].title())
	require.Equal(t, []readmeStep{{line: 4, command: "echo a \\\n    b", want: []string{"a b"}}, {line: 7, command: "true"}}, doc.sections[0].blocks[0].steps)
	require.Equal(t, []string{"README.md:10: a transcript in a ```sh block, which does not run; make it ```console"}, doc.problems)

	var devTerminal readmeDoc
	devTerminal.parse("README.md", "```text dev-terminal\n$ not a command\nevent x\n```\n")
	require.Equal(t, []readmeSection{{file: "README.md", blocks: []readmeBlock{{line: 1, devTerminal: true, steps: []readmeStep{{line: 1, want: []string{"$ not a command", "event x"}}}}}}}, devTerminal.sections)

	var port readmeDoc
	port.parse("docs/walkthrough.md", "```console\n$ echo a\n$ curl localhost:8080/x\n```\n")
	require.Equal(t, []string{"docs/walkthrough.md:3: a command names a port or host of its own; use $API, $PROVIDER or $BACKUP"}, port.problems)

	// Sections: each heading's blocks together, a heading of another
	// document a section of its own, and the stack's flags from the dev
	// section's sh block.
	var two readmeDoc
	two.parse("README.md", "## A\n```console\n$ a\n```\ntext\n```console\n$ b\n```\n### B\n```console\n$ c\n```\n")
	two.parse("docs/walkthrough.md", "# W\n"+readmeDevSection+"\n```sh\ngo run ./dev --abandon-after 40s   # short\n```\n## A\n```console\n$ d\n```\n")
	var got []string
	for _, s := range two.sections {
		got = append(got, fmt.Sprintf("%s %s %d", s.file, s.title(), len(s.blocks)))
	}
	require.Equal(t, []string{"README.md A 2", "README.md B 1", "docs/walkthrough.md A 1"}, got)
	require.Equal(t, []string{"--abandon-after", "40s"}, two.devArgs)

	require.True(t, readmeMatch([]string{"key 01a22b83-2a17-7017-be92-b07d3c754fef", "…", "paid ch_…"},
		[]string{"key 01a23f00-0000-7000-8000-000000000000", "attempt 1", "attempt 2", "paid ch_000004"}))
	require.True(t, readmeMatch([]string{"a", "…", "b"}, []string{"a", "b"}))
	require.False(t, readmeMatch([]string{"attempt 4  201 replayed"}, []string{"attempt 5  201 replayed"}))
	require.False(t, readmeMatch([]string{"a"}, []string{"a", "b"}), "a line the document lacks")
	require.False(t, readmeMatch([]string{"a", "b"}, []string{"a"}), "a line the output lacks")
}

func TestReadme_RunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's walkthrough against the dev binary")
	}
	t.Parallel()
	var doc readmeDoc
	for _, file := range readmeDocuments {
		raw, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(file)))
		require.NoError(t, err)
		doc.parse(file, string(raw))
	}
	require.Empty(t, doc.problems, "the documents break the console convention")
	require.NotEmpty(t, doc.devArgs, "no `go run ./dev …` line in a sh block of %q", readmeDevSection)
	require.NotEmpty(t, doc.sections)

	for _, tool := range []string{"bash", "curl", "jq"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the documents' commands need %s (.ci/run installs it)", tool)
	}
	devBin := buildBinary(t, "chargeonce/dev")
	work := t.TempDir()
	dev := startDev(t, devBin, filepath.Join(work, ".chargeonce"), doc.devArgs...)
	defer dev.stop(t)

	sh := startReadmeShell(t, work)
	for _, section := range doc.sections {
		t.Run(section.title(), func(t *testing.T) { runReadmeSection(t, sh, dev, section) })
		if sh.busy != "" {
			t.Fatalf("%s, section %q: the shell is still running\n$ %s\nso the sections after it cannot run", section.file, section.title(), sh.busy)
		}
	}
}

// runReadmeSection runs a section's blocks on the shell and compares what
// they print with what the section shows.
func runReadmeSection(t *testing.T, sh *readmeShell, dev *devProcess, section readmeSection) {
	for _, block := range section.blocks {
		if block.devTerminal {
			checkDevTerminal(t, dev, section, block)
			continue
		}
		for _, step := range block.steps {
			command := step.command
			if m := readmeVariable.FindStringSubmatch(command); m != nil {
				command = m[1] + "=" + map[string]string{"API": dev.api, "PROVIDER": dev.provider, "BACKUP": dev.backup}[m[1]]
			}
			got := sh.run(t, command, 5*time.Minute)
			if !readmeMatch(step.want, got) {
				t.Errorf("%s:%d, in the console block at line %d:\n$ %s\n%s",
					section.file, step.line, block.line, step.command, readmeDiff(step.want, got))
			}
		}
	}
}

// checkDevTerminal waits until dev's output holds the block's lines in
// order, as the events a dispatcher delivers arrive when they arrive.
func checkDevTerminal(t *testing.T, dev *devProcess, section readmeSection, block readmeBlock) {
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
			t.Errorf("%s:%d, the dev terminal's lines are not all in dev's output, in order, within a minute:\n%s",
				section.file, block.line, readmeDiff(block.steps[0].want, got))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readmeDiff shows the document's lines and the output's, each prefixed.
func readmeDiff(want, got []string) string {
	var b strings.Builder
	b.WriteString("--- the document shows\n")
	for _, w := range want {
		b.WriteString("- " + w + "\n")
	}
	b.WriteString("+++ the command printed\n")
	for _, g := range got {
		b.WriteString("+ " + g + "\n")
	}
	return b.String()
}

// readmeShell is one bash that runs the documents' commands in turn, as a
// reader's terminal would.
type readmeShell struct {
	stdin    io.WriteCloser
	lines    chan string
	sentinel string
	// busy is the command that did not end in time, or during which bash
	// exited; no command can run after it.
	busy string
}

// readmeGoEnv are the go command's settings that the test's go command has
// and a reader's shell with its own HOME would not: without them, `go run`
// in the shell would compile everything again into an empty cache.
var readmeGoEnv = []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOTOOLCHAIN", "CGO_ENABLED"}

// shQuote quotes s as one word for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeReadmeGo writes into bin the go command the shell finds on its PATH:
// `go run ./starter …` runs the real go run of the module the test runs in,
// its program in the shell's current directory; every other go command is
// refused, since it would not be tested as the reader runs it.
func writeReadmeGo(t *testing.T, bin string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	goBin, err = filepath.Abs(goBin)
	require.NoError(t, err)
	module, err := filepath.Abs("..")
	require.NoError(t, err)
	out, err := exec.Command(goBin, append([]string{"env"}, readmeGoEnv...)...).Output()
	require.NoError(t, err, "go env")
	values := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, values, len(readmeGoEnv), "go env")
	var env strings.Builder
	for i, name := range readmeGoEnv {
		fmt.Fprintf(&env, "export %s=%s\n", name, shQuote(values[i]))
	}
	// go run -C runs the program in the module's directory too; the exec
	// helper takes it back to the reader's.
	inDir := filepath.Join(bin, "in-reader-dir")
	require.NoError(t, os.WriteFile(inDir, []byte("#!/bin/sh\ncd \"$README_DIR\" || exit 1\nunset README_DIR\nexec \"$@\"\n"), 0o755))
	wrapper := "#!/bin/sh\n" +
		"if [ \"$1\" = run ] && [ \"$2\" = ./starter ]; then\n" +
		"\tshift 2\n" +
		"\tREADME_DIR=$PWD; export README_DIR\n" +
		env.String() +
		"\texec " + shQuote(goBin) + " run -C " + shQuote(module) + " -exec " + shQuote(shQuote(inDir)) + " ./starter \"$@\"\n" +
		"fi\n" +
		"echo \"README test: console blocks run only 'go run ./starter', not: go $*\" >&2\nexit 127\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755))
}

func startReadmeShell(t *testing.T, dir string) *readmeShell {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	writeReadmeGo(t, bin)

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
				s.busy = command
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
			s.busy = command
			t.Fatalf("no end within %v of\n$ %s\n%s", timeout, command, strings.Join(out, "\n"))
		}
	}
}
