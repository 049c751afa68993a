package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/internal/corpus"
)

// The TAP YAML block is read by tapYAML, a bounded line-by-line key reader,
// rather than gopkg.in/yaml.v3 (issue #18 asked for the library "if
// measured not slower"). BenchmarkTAPYAML measures both on every YAML block
// of the corpus's TAP reports, and counts the blocks on which the library
// reading would differ from tapYAML (yaml-differ) or refuse the block
// (yaml-refused): TAP producers write "YAMLish", not always YAML.

// yamlBlock is one diagnostic block: the indentation of its "---" and its
// lines after "---", through the closing "...".
type yamlBlock struct {
	base  int
	lines [][]byte
}

// yamlFields is what the inventory takes from a block.
type yamlFields struct {
	message, errText   string
	hasMessage, hasErr bool
	file               string
	line               int
}

func corpusYAMLBlocks(tb testing.TB) []yamlBlock {
	dir := filepath.Join(corpus.Dir(tb), "tap")
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []yamlBlock
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		var cur *yamlBlock
		for _, line := range bytes.Split(data, []byte("\n")) {
			indent, _ := tapIndent(line)
			trimmed := bytes.TrimSpace(line)
			switch {
			case cur == nil && string(trimmed) == "---":
				cur = &yamlBlock{base: indent}
			case cur != nil:
				cur.lines = append(cur.lines, line)
				if indent == cur.base && string(trimmed) == "..." {
					out = append(out, *cur)
					cur = nil
				}
			}
		}
	}
	if len(out) == 0 {
		tb.Fatal("no YAML block in the corpus's TAP reports")
	}
	return out
}

func handYAML(b yamlBlock) yamlFields {
	y := newTAPYAML(b.base, DefaultLimits.MaxField, 0)
	for _, l := range b.lines {
		y.feed(l)
	}
	return yamlFields{string(y.message.Buf), string(y.errText.Buf), y.hasMessage, y.hasError, y.file, y.fileLine}
}

// libYAML reads the same keys with yaml.v3: the block, dedented, is one
// YAML document.
func libYAML(b yamlBlock) (yamlFields, error) {
	var doc bytes.Buffer
	for _, l := range b.lines[:len(b.lines)-1] {
		doc.Write(l[min(b.base, len(l)):])
		doc.WriteByte('\n')
	}
	var n yaml.Node
	var f yamlFields
	if err := yaml.Unmarshal(doc.Bytes(), &n); err != nil {
		return f, err
	}
	if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return f, nil
	}
	y := &tapYAML{}
	m := n.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		k, v := m[i].Value, m[i+1]
		switch k {
		case "message":
			f.message, f.hasMessage = v.Value, true
		case "error":
			f.errText, f.hasErr = v.Value, true
		case "file", "line":
			y.setLocationKey(k, []byte(v.Value))
		case "at", "location":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					y.setLocationKey(v.Content[j].Value, []byte(v.Content[j+1].Value))
				}
			} else {
				y.setLocation(v.Value)
			}
		}
	}
	f.file, f.line = y.file, y.fileLine
	return f, nil
}

func BenchmarkTAPYAML(b *testing.B) {
	all := corpusYAMLBlocks(b)
	// Both are timed on the blocks the library accepts (a refusal returns
	// early and would flatter it); what it refuses or reads differently is
	// counted once, apart from the timing.
	var blocks []yamlBlock
	differ, size := 0, 0
	for _, bl := range all {
		got, err := libYAML(bl)
		if err != nil {
			continue
		}
		if got != handYAML(bl) {
			differ++
		}
		blocks = append(blocks, bl)
		for _, l := range bl.lines {
			size += len(l) + 1
		}
	}
	for _, impl := range []struct {
		name string
		read func(yamlBlock)
	}{
		{"hand-written", func(bl yamlBlock) { handYAML(bl) }},
		{"yaml.v3", func(bl yamlBlock) { libYAML(bl) }},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, bl := range blocks {
					impl.read(bl)
				}
			}
			b.ReportMetric(float64(len(blocks)), "blocks")
			b.ReportMetric(float64(len(all)-len(blocks)), "yaml-refused")
			b.ReportMetric(float64(differ), "yaml-differ")
		})
	}
}
