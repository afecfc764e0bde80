package pipelines

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/stages"
)

// hclRange is hcl's own range format (file:3,22-22), which piship never
// prints: positions are file:line:col.
var hclRange = regexp.MustCompile(`:\d+,\d+-\d+`)

// testConfig is a run configuration with its own cache and no live view.
func testConfig(t *testing.T, stderr *bytes.Buffer) Config {
	home := t.TempDir()
	env := map[string]string{"PISHIP_CACHE_HOME": filepath.Join(home, "cache"), "PISHIP_PROGRESS": "0", "NO_COLOR": "1",
		"PISHIP_INSTALL_HOME": filepath.Join(home, "install"), "PISHIP_BIN_HOME": filepath.Join(home, "bin"), "PISHIP_STATE_HOME": filepath.Join(home, "state")}
	return Config{Stderr: stderr, Getenv: func(k string) string { return env[k] }, Kinds: stages.Default()}
}

func writeTestFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// validateCLI is `piship validate ARGS`: Collect, then Validate.
func validateCLI(t *testing.T, c Config, args ...string) int {
	srcs, err := Collect(args, false)
	if err != nil {
		t.Fatal(err)
	}
	if v := Validate(c.Stderr, c.Getenv, stages.Default(), srcs); v.Failed > 0 {
		return ExitUsage
	}
	return ExitOK
}

// runCLI is `piship run FILE --input ...`: Prepare, then Run.
func runCLI(c Config, file string, inputs ...string) int {
	p, err := Prepare(c, file, "", false, inputs)
	if p == nil {
		return ExitCode(err)
	}
	return p.Run(context.Background(), c).Code
}

const inputsPipeline = `pipeline "typed" {
  input "n" {
    type = number
  }
  input "b" {
    type    = bool
    default = false
  }
  input "l" {
    type    = list(string)
    default = []
  }
  input "m" {
    type    = map(number)
    default = {}
  }
  input "s" {
    type    = string
    default = ""
  }
  stage "exec" "a" {
    command = ["true"]
  }
}
`

// distributionHCL is a valid distribution.hcl; a row's mistake is one edit of it.
const distributionHCL = `distribution "demo" {
  name    = "Demo"
  version = "1.0.0"
  command = "demo"
  runtime {
    entry = "node_modules/demo-cli/bin/demo.js"
  }
  release {
    targets = ["linux-x64"]
  }
}
`

// Realistic mistakes, called the way the CLI calls them, all print in one
// format: `file:line:col: error: summary` (or `file: error: summary` when
// there is no position), the source line with a caret when there is a
// position, then the fix; never `<nil>` or hcl's `file:3,22-22`.
func TestMistakesPrintOneFormat(t *testing.T) {
	dir := t.TempDir()
	// distribution writes a distribution directory holding hcl as its
	// distribution.hcl and a good runtime, so hcl is the only mistake.
	distribution := func(t *testing.T, hcl string) string {
		dist := t.TempDir()
		writeTestFile(t, dist, "distribution.hcl", hcl)
		writeTestFile(t, dist, "runtime/package.json", `{"name":"demo","version":"1.0.0"}`)
		writeTestFile(t, dist, "runtime/package-lock.json", `{"name":"demo","lockfileVersion":3,"packages":{}}`)
		return dist
	}
	aDistribution := distribution(t, distributionHCL)
	missingAttr := writeTestFile(t, dir, "missing.hcl", "pipeline \"p\" {\n  stage \"exec\" \"a\" {\n    env = {}\n  }\n}\n")
	kindTypo := writeTestFile(t, dir, "typo.hcl", `pipeline "p" {
  stage "exce" "greet" {
    command = ["echo", "hi"]
  }
  stage "exec" "after" {
    command    = ["echo", stage.greet.stdout]
    depends_on = [stage.greet]
  }
  verdicts = [stage.greet, stage.after]
}
`)
	typed := writeTestFile(t, dir, "typed.hcl", inputsPipeline)
	runtimeErr := writeTestFile(t, dir, "eval.hcl", "pipeline \"e\" {\n  stage \"exec\" \"a\" {\n    command = [\"echo\", \"abc\"]\n  }\n  stage \"exec\" \"b\" {\n    command = [\"echo\", tonumber(trimspace(stage.a.stdout))]\n  }\n}\n")
	unparsable := writeTestFile(t, dir, "broken.hcl", "pipeline \"x\" {\n  a = \n}\n")

	for _, tc := range []struct {
		name string
		run  func(c Config) int
		// build, when set, is a distribution.hcl that run builds instead.
		build string
		code  int // -1: any failure (the exit-code rule is not this test's)
		// want are substrings of stderr in order; an empty want is
		// "this command succeeds".
		want []string
		// errors is how many `error:` headings stderr holds (0: not
		// checked).
		errors int
	}{
		{
			name: "wrong path: build of a directory without distribution.hcl",
			run: func(c Config) int {
				_, err := Build(context.Background(), c, BuildArgs{Distribution: filepath.Join(dir, "nope")})
				return ExitCode(err)
			},
			code:   ExitUsage,
			want:   []string{filepath.Join(dir, "nope", "distribution.hcl") + ": error: Cannot read the distribution\n", "  " + filepath.Join(dir, "nope") + " has no distribution.hcl.", "CONFIG_INVALID"},
			errors: 1,
		},
		{
			name: "no range through a stage: run build on a directory without distribution.hcl",
			run: func(c Config) int {
				return runCLI(c, "build", "distribution="+filepath.Join(dir, "nope"))
			},
			code: ExitUsage, // CONFIG_INVALID is a configuration error wherever it comes from (ExitCode)
			want: []string{filepath.Join(dir, "nope", "distribution.hcl") + ": error: Cannot read the distribution\n", "has no distribution.hcl",
				"build: stage inputs failed: CONFIG_INVALID: " + filepath.Join(dir, "nope", "distribution.hcl") + ": Cannot read the distribution"},
			errors: 1,
		},
		{
			name:   "missing attribute in distribution.hcl: build",
			build:  strings.Replace(distributionHCL, "  command = \"demo\"\n", "", 1),
			code:   ExitUsage,
			want:   []string{"/distribution.hcl:1:21: error: Missing required argument\n", "    1 | distribution \"demo\" {\n      |                     ^\n", "  distribution \"demo\" requires command", "CONFIG_INVALID"},
			errors: 1,
		},
		{
			name:   "a bare word in distribution.hcl: build prints it as validate does",
			build:  strings.Replace(distributionHCL, `"Demo"`, "Demo", 1),
			code:   ExitUsage,
			want:   []string{"/distribution.hcl:2:13: error: Variables not allowed\n", "    2 |   name    = Demo\n      |             ^^^^\n", "write the value itself", "CONFIG_INVALID"},
			errors: 1,
		},
		{
			name:   "missing attribute in a pipeline: validate",
			run:    func(c Config) int { return validateCLI(t, c, missingAttr) },
			code:   ExitUsage,
			want:   []string{"missing.hcl:2:", ": error: Missing required argument\n", "    2 |   stage \"exec\" \"a\" {\n", "^", `The argument "command" is required`},
			errors: 1,
		},
		{
			name:   "unknown kind: one diagnostic with its suggestion, no cascade",
			run:    func(c Config) int { return validateCLI(t, c, kindTypo) },
			code:   ExitUsage,
			want:   []string{"typo.hcl:2:9: error: Unknown stage kind\n", "    2 |   stage \"exce\" \"greet\" {\n      |         ^^^^^^\n", `Did you mean "exec"?`},
			errors: 1,
		},
		{
			name:   "unknown kind: run says the same",
			run:    func(c Config) int { return runCLI(c, kindTypo) },
			code:   ExitUsage,
			want:   []string{"typo.hcl:2:9: error: Unknown stage kind\n", `Did you mean "exec"?`, "piship: CONFIG_INVALID: " + kindTypo + " has 1 error"},
			errors: 1,
		},
		{
			name: "bad --input: number",
			run:  func(c Config) int { return runCLI(c, typed, "n=abc") },
			code: ExitUsage,
			want: []string{"piship: CONFIG_INVALID: --input n=abc: n is a number; abc is not a number (write --input n=3)\n"},
		},
		{
			name: "bad --input: bool",
			run:  func(c Config) int { return runCLI(c, typed, "n=1", "b=yes") },
			code: ExitUsage,
			want: []string{"piship: CONFIG_INVALID: --input b=yes: b is a bool; yes is not true or false (write --input b=true)\n"},
		},
		{
			name: "bad --input: list",
			run:  func(c Config) int { return runCLI(c, typed, "n=1", "l=a,b") },
			code: ExitUsage,
			want: []string{`piship: CONFIG_INVALID: --input l=a,b: l is list(string); a,b is not a list(string) value (write --input l='["a", "b"]')` + "\n"},
		},
		{
			name: "bad --input: map",
			run:  func(c Config) int { return runCLI(c, typed, "n=1", `m={ k = "x" }`) },
			code: ExitUsage,
			want: []string{`piship: CONFIG_INVALID: --input m={ k = "x" }: m is map(number); { k = "x" } is not a map(number) value (`, `(write --input m='{ k = 3 }')` + "\n"},
		},
		{
			name: "bad --input: an input the pipeline does not declare",
			run:  func(c Config) int { return runCLI(c, typed, "nn=1") },
			code: ExitUsage,
			want: []string{`piship: CONFIG_INVALID: --input nn: pipeline "typed" has no input "nn"; did you mean --input n=...?` + "\n"},
		},
		{
			name: "--input of a string takes a bare word, of a number a number",
			run:  func(c Config) int { return runCLI(c, typed, "s=abc", "n=3", "b=true", `l=["x"]`) },
			code: ExitOK,
		},
		{
			name:   "an expression failing at run time: the run prints it with its snippet",
			run:    func(c Config) int { return runCLI(c, runtimeErr) },
			code:   ExitUsage, // CONFIG_INVALID: a configuration error (ExitCode)
			want:   []string{"eval.hcl:6:24: error: Error in function call\n", "    6 |     command = [\"echo\", tonumber(", "      |                        ^", `Call to function "tonumber" failed`, "e: stage b failed: CONFIG_INVALID: " + runtimeErr + ":6:24: Error in function call"},
			errors: 1,
		},
		{
			name: "install of a distribution directory says what to install instead",
			run: func(c Config) int {
				_, err := Install(context.Background(), c, InstallArgs{Source: aDistribution})
				return ExitCode(err)
			},
			code: -1,
			want: []string{"CONFIG_INVALID: " + aDistribution + " is a distribution (it holds distribution.hcl), not a release or a payload: run `piship release " + aDistribution + "`"},
		},
		{
			name:   "fmt of a file that does not parse",
			run:    func(c Config) int { return Format(&bytes.Buffer{}, c.Stderr, c.Getenv, []string{unparsable}, false) },
			code:   ExitUsage,
			want:   []string{"broken.hcl:2:7: error: Invalid expression\n", "    2 |   a = \n", "      |       ^\n", "Expected the start of an expression", "piship: CONFIG_INVALID: " + unparsable + " does not parse"},
			errors: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run
			if tc.build != "" {
				dist := distribution(t, tc.build)
				run = func(c Config) int {
					_, err := Build(context.Background(), c, BuildArgs{Distribution: dist})
					return ExitCode(err)
				}
			}
			var stderr bytes.Buffer
			code := run(testConfig(t, &stderr))
			got := stderr.String()
			if code != tc.code && (tc.code != -1 || code == ExitOK) {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, got)
			}
			last := 0
			for _, w := range tc.want {
				i := strings.Index(got[last:], w)
				if i < 0 {
					t.Fatalf("stderr lacks %q (after byte %d):\n%s", w, last, got)
				}
				last += i + len(w)
			}
			if strings.Contains(got, "<nil>") || hclRange.MatchString(got) {
				t.Errorf("stderr has <nil> or an hcl range:\n%s", got)
			}
			if n := strings.Count(got, ": error: "); tc.errors > 0 && n != tc.errors {
				t.Errorf("%d error headings, want %d:\n%s", n, tc.errors, got)
			}
			if strings.Contains(got, "There is no stage named") {
				t.Errorf("a cascading reference error:\n%s", got)
			}
		})
	}
}
