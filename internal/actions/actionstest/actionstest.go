// Package actionstest reads GitHub Actions runtime files the way the runner
// does, for tests that drive runmill (or the composite action) as a workflow
// step would be driven: GITHUB_OUTPUT, GITHUB_ENV and GITHUB_STATE hold
// "name=value" lines and "name<<DELIMITER" heredocs; GITHUB_PATH holds one
// directory per line.
package actionstest

import (
	"fmt"
	"os"
	"strings"
)

// ParseFileCommands parses the contents of a GITHUB_OUTPUT or GITHUB_ENV
// file as the runner's SetOutputFileCommand / SetEnvFileCommand do: a
// heredoc's value is the lines up to the one equal to its delimiter,
// joined by "\n"; a later assignment of the same name wins. Malformed
// content is an error, as it fails the step on the runner.
func ParseFileCommands(content string) (map[string]string, error) {
	out := map[string]string{}
	content = strings.ReplaceAll(content, "\r\n", "\n")
	lines := strings.Split(content, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" {
			continue
		}
		eq := strings.Index(line, "=")
		hd := strings.Index(line, "<<")
		switch {
		case hd > 0 && (eq < 0 || hd < eq):
			name, delim := line[:hd], line[hd+2:]
			if delim == "" {
				return nil, fmt.Errorf("line %d: %q: empty heredoc delimiter", i+1, line)
			}
			var val []string
			j := i + 1
			for ; j < len(lines) && lines[j] != delim; j++ {
				val = append(val, lines[j])
			}
			if j == len(lines) {
				return nil, fmt.Errorf("line %d: heredoc %q of %q is never closed", i+1, delim, name)
			}
			out[name] = strings.Join(val, "\n")
			i = j
		case eq > 0:
			out[line[:eq]] = line[eq+1:]
		default:
			return nil, fmt.Errorf("line %d: %q is neither name=value nor name<<DELIMITER", i+1, line)
		}
	}
	return out, nil
}

// ReadFileCommands reads and parses one runtime file; a missing file holds
// nothing.
func ReadFileCommands(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseFileCommands(string(b))
}
