package actions_test

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// renderDocs: TestRenderSummaries also writes the rendered not-merge-ready
// summary to docs/ (go test ./internal/actions -run TestRenderSummaries
// -render-docs), the picture README.md shows; it is never drawn by hand.
var renderDocs = flag.Bool("render-docs", false, "write docs/job-summary.png from the golden summary")

// docsPNG is the picture README.md shows.
const docsPNG = "../../docs/job-summary.png"

// page is the summary's HTML as a reviewer's browser shows it: GitHub's
// Markdown (GFM tables, raw HTML for <details>) in a column of GitHub's
// width, with the system's sans-serif font.
const page = `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body { margin: 0; background: #fff; }
main { box-sizing: border-box; width: 1012px; padding: 24px 32px; color: #1f2328;
  font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
h2 { font-size: 1.5em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin: 0 0 16px; }
h3 { font-size: 1.25em; margin: 24px 0 16px; }
table { border-collapse: collapse; display: block; width: max-content; max-width: 100%; overflow: auto; margin-bottom: 16px; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; vertical-align: top; }
tr:nth-child(2n) { background: #f6f8fa; }
th { font-weight: 600; }
code { background: #eff1f3; border-radius: 6px; padding: .2em .4em; font: 85% ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: #f6f8fa; padding: 16px; border-radius: 6px; overflow: auto; }
pre code { background: none; padding: 0; }
a { color: #0969da; text-decoration: none; }
</style></head><body><main>
`

// TestRenderSummaries renders each golden job summary to PNG in headless
// Chromium, as a reviewer's browser would, and checks the picture is one:
// it decodes, has the page's width, and is neither blank nor one colour.
// Under CI=true a missing chromium fails the test (scripts/setup.sh
// installs it); elsewhere it skips.
func TestRenderSummaries(t *testing.T) {
	chromium := testreq.Tool(t, "chromium")[0]
	md := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	for _, name := range []string{"shop-bad", "shop-good"} {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "TestPublish", name+".summary.md"))
			if err != nil {
				t.Fatal(err)
			}
			var doc bytes.Buffer
			doc.WriteString(page)
			if err := md.Convert(src, &doc); err != nil {
				t.Fatal(err)
			}
			doc.WriteString("</main></body></html>\n")
			if !strings.Contains(doc.String(), "<table>") {
				t.Fatalf("goldmark rendered no table (GFM off?):\n%s", doc.String())
			}
			dir := t.TempDir()
			htmlPath := filepath.Join(dir, "summary.html")
			if err := os.WriteFile(htmlPath, doc.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(dir, "summary.png")
			cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
				"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1012,3000",
				"file://"+htmlPath)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("chromium: %v\n%s", err, out)
			}
			f, err := os.Open(shot)
			if err != nil {
				t.Fatalf("chromium wrote no screenshot: %v", err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatalf("the screenshot is no PNG: %v", err)
			}
			img = cropBlank(img)
			b := img.Bounds()
			if b.Dx() != 1012 || b.Dy() < 300 {
				t.Fatalf("the rendered summary is %dx%d: want 1012 wide and a page of content", b.Dx(), b.Dy())
			}
			if n := colours(img); n < 16 {
				t.Fatalf("the rendered summary has %d colours: blank, not a page", n)
			}
			if *renderDocs && name == "shop-bad" {
				var out bytes.Buffer
				if err := png.Encode(&out, img); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(docsPNG, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s (%dx%d, %d bytes)", docsPNG, b.Dx(), b.Dy(), out.Len())
			}
		})
	}
}

// cropBlank cuts the white rows below the page's content (the window is
// taller than any summary).
func cropBlank(img image.Image) image.Image {
	b := img.Bounds()
	last := b.Min.Y
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				last = y
				break
			}
		}
	}
	end := min(last+24, b.Max.Y)
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), end-b.Min.Y))
	for y := b.Min.Y; y < end; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.Set(x-b.Min.X, y-b.Min.Y, img.At(x, y))
		}
	}
	return out
}

// colours counts the distinct colours of img, up to 1000.
func colours(img image.Image) int {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y && len(seen) < 1000; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}] = true
		}
	}
	return len(seen)
}
