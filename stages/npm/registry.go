package npm

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// DefaultRegistry is npm's default registry.
const DefaultRegistry = "https://registry.npmjs.org/"

// Registry returns the registry npm would use for a project in dir (the
// directory holding its package.json), always ending in "/". It reads
// npm's configuration the way npm does, highest precedence first, without
// starting npm (~0.3 s):
//
//   - the environment: npm_config_registry (any case);
//   - the project's dir/.npmrc;
//   - the user's: $npm_config_userconfig, else ~/.npmrc;
//   - the global: $npm_config_globalconfig, else <prefix>/etc/npmrc, where
//     prefix is $npm_config_prefix or $PREFIX, else node's installation;
//   - npm's built-in npmrc beside its package.json;
//
// else DefaultRegistry. ${VAR} in .npmrc values is expanded from the
// environment as npm does. Command-line flags do not exist here (piship
// passes none).
func Registry(dir string) string {
	if v := envConfig("registry"); v != "" {
		return withSlash(v)
	}
	for _, f := range npmrcFiles(dir) {
		if v := readNpmrc(f, "registry"); v != "" {
			return withSlash(v)
		}
	}
	return DefaultRegistry
}

func withSlash(u string) string {
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// envConfig returns npm_config_<key> from the environment, any case.
func envConfig(key string) string {
	want := "npm_config_" + strings.ReplaceAll(key, "-", "_")
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.EqualFold(k, want) && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// npmrcFiles lists the configuration files npm reads for a project in dir,
// highest precedence first.
func npmrcFiles(dir string) []string {
	files := []string{filepath.Join(dir, ".npmrc")}
	if u := envConfig("userconfig"); u != "" {
		files = append(files, u)
	} else if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".npmrc"))
	}
	if g := envConfig("globalconfig"); g != "" {
		files = append(files, g)
	} else if prefix := globalPrefix(); prefix != "" {
		files = append(files, filepath.Join(prefix, "etc", "npmrc"))
	}
	if npm, err := exec.LookPath("npm"); err == nil {
		if real, err := filepath.EvalSymlinks(npm); err == nil && filepath.Base(real) == "npm-cli.js" {
			files = append(files, filepath.Join(filepath.Dir(filepath.Dir(real)), "npmrc"))
		}
	}
	return files
}

// globalPrefix is npm's global prefix: $npm_config_prefix, $PREFIX, else
// node's installation (the directory of node on Windows, its parent
// elsewhere).
func globalPrefix() string {
	if p := envConfig("prefix"); p != "" {
		return p
	}
	if p := os.Getenv("PREFIX"); p != "" {
		return p
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(node); err == nil {
		node = real
	}
	if runtime.GOOS == "windows" {
		return filepath.Dir(node)
	}
	return filepath.Dir(filepath.Dir(node))
}

var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\\*)\$\{([^${}?]+)(\?)?\}`) })

// readNpmrc returns the value of key in an .npmrc (ini) file, "" if the
// file or the key is missing.
func readNpmrc(file, key string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	value := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	section := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section != "" || strings.TrimSpace(k) != key {
			continue
		}
		value = expandEnv(unquote(strings.TrimSpace(v))) // the last one wins
	}
	return strings.TrimSpace(value)
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"') {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
		return v[1 : len(v)-1]
	}
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	return v
}

// expandEnv replaces ${VAR} with the environment's value as npm does:
// ${VAR?} is empty when VAR is unset, ${VAR} stays as it is; a run of
// backslashes before it is halved, and an odd run keeps it literally.
func expandEnv(v string) string {
	return envRef().ReplaceAllStringFunc(v, func(m string) string {
		sub := envRef().FindStringSubmatch(m)
		esc, name := sub[1], sub[2]
		if len(esc)%2 == 1 {
			return m[(len(esc)+1)/2:]
		}
		val, ok := os.LookupEnv(name)
		if !ok {
			val = "${" + name + "}"
			if sub[3] == "?" {
				val = ""
			}
		}
		return esc[len(esc)/2:] + val
	})
}
