package harness

import (
	"fmt"
	"testing"
)

// BenchmarkLayable is the file-under-a-file rule alone, past MaxFiles: what
// it costs at issue 23's 200 000 files, where the pair loop it replaced
// did not finish in 600 s.
func BenchmarkLayable(b *testing.B) {
	files := make([]File, 200_000)
	for i := range files {
		files[i] = File{Path: fmt.Sprintf("pkg%04d/sub%03d/conftest.py", i/1000, i%1000), Ran: FromBase}
	}
	for b.Loop() {
		if err := layable(files); err != nil {
			b.Fatal(err)
		}
	}
}
