package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/ui/htmlview"
)

// TestCheckRowsFindsALetterColumn: the window check's Race check fails on the
// RichText the polaroid pane used to show (text near the right edge, then a
// link: Fyne's word wrapping squeezed the text after the link into a column one
// letter wide), and passes the same pages as htmlview shows them now.
func TestCheckRowsFindsALetterColumn(t *testing.T) {
	test.NewTempApp(t)
	caught := map[bool]int{}
	for n := range 24 {
		w := test.NewTempWindow(t, container.NewVBox())
		w.SetPadded(false)
		before := strings.Repeat("word ", n) + strings.Repeat("x", n%5)
		v := htmlview.New(nil)
		v.SetDoc(htmlsafe.Parse(`<p>` + before + ` <a href="/wiki/Electron">electron</a>utility and then ` +
			`<a href="/wiki/Microsoft">Microsoft</a> and <a href="/wiki/Unix">Unix</a> too</p>`))
		w.SetContent(v)
		w.Resize(fyne.NewSize(400, 1200))
		texts := richTexts(v)
		if _, err := checkRows("Polaroid", texts); err != nil {
			t.Errorf("%d words before: htmlview's page failed the check: %v", n, err)
		}

		// As the pane drew it before: one RichText, Fyne's word wrapping, no
		// breaks before links.
		var plain []widget.RichTextSegment
		for _, s := range cloneSegments(texts[0].Segments) {
			if x, ok := s.(*widget.TextSegment); !ok || x.Text != "\n" {
				plain = append(plain, s)
			}
		}
		old := widget.NewRichText(plain...)
		old.Wrapping = fyne.TextWrapWord
		w = test.NewTempWindow(t, old)
		w.SetPadded(false)
		w.Resize(fyne.NewSize(400, 1200))
		// The twin's rows are the rows Fyne drew.
		if got, drawn := rowTexts(laidOutRows(old)), rowTexts(rowsOf(test.WidgetRenderer(old).Objects())); strings.Join(got, "|") != strings.Join(drawn, "|") {
			t.Fatalf("%d words before: rows read %q, Fyne drew %q", n, got, drawn)
		}
		if _, err := checkRows("Polaroid", []*widget.RichText{old}); err != nil {
			caught[strings.Contains(err.Error(), "wraps by letters")]++
		}
	}
	// The old pane's link ran off the edge and the text after it stood in a
	// column of letters.
	if caught[true] == 0 {
		t.Errorf("of 24 pages of the old pane, none failed the check for a letter column (%d for a row past the edge)",
			caught[false])
	}
}

func richTexts(v *htmlview.View) []*widget.RichText {
	var texts []*widget.RichText
	walkShown(v.CreateRenderer().Objects(), func(o fyne.CanvasObject) {
		if rt, ok := o.(*widget.RichText); ok {
			texts = append(texts, rt)
		}
	})
	return texts
}

func rowTexts(rows []laidOutRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.text)
	}
	return out
}
