package ui

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/engine"
)

// TestSplitMarkdown: GitHub tables and fenced code blocks at the top level
// are cut out of a message's markdown; what only looks like one stays prose.
func TestSplitMarkdown(t *testing.T) {
	table := func(rows ...[]string) mdPart { return mdPart{kind: mdTable, rows: rows} }
	prose := func(s string) mdPart { return mdPart{kind: mdProse, text: s} }
	code := func(lang, s string) mdPart { return mdPart{kind: mdCode, lang: lang, text: s} }
	for _, c := range []struct {
		name string
		md   string
		want []mdPart
	}{
		{"prose", "Just **words**.\n\n- a list", []mdPart{prose("Just **words**.\n\n- a list")}},
		{"table between prose", "Sizes:\n\n| Name | Size |\n|---|:---:|\n| int4 | 17 GB |\n| bf16 | 52 GB |\n\nPick int4.",
			[]mdPart{prose("Sizes:\n"), table([]string{"Name", "Size"}, []string{"int4", "17 GB"}, []string{"bf16", "52 GB"}), prose("\nPick int4.")}},
		{"no outer pipes, short and long rows", "a | b\n--|--:\n1 |\n1 | 2 | 3",
			[]mdPart{table([]string{"a", "b"}, []string{"1", ""}, []string{"1", "2"})}},
		{"escaped pipe and inline code", "| op | means |\n| - | - |\n| `a \\| b` | or |",
			[]mdPart{table([]string{"op", "means"}, []string{"`a | b`", "or"})}},
		{"ends at a line without a pipe", "|a|\n|-|\n|1|\nafter",
			[]mdPart{table([]string{"a"}, []string{"1"}), prose("after")}},
		{"delimiter of another width", "| a | b |\n|---|\n| 1 | 2 |", []mdPart{prose("| a | b |\n|---|\n| 1 | 2 |")}},
		{"no delimiter", "a | b\nc | d", []mdPart{prose("a | b\nc | d")}},
		{"code", "Run:\n\n```bash\nls -l | wc\n```\nDone.", []mdPart{prose("Run:\n"), code("bash", "ls -l | wc"), prose("Done.")}},
		{"a table in code is code", "~~~~\n| a | b |\n|---|---|\n~~~\n~~~~", []mdPart{code("", "| a | b |\n|---|---|\n~~~")}},
		{"unclosed fence (still being written)", "```python\ndef f():\n", []mdPart{code("python", "def f():\n")}},
		{"inline triple backticks", "```not``` a fence", []mdPart{prose("```not``` a fence")}},
		{"fence under a list item stays in the list", "1. Run\n   ```\n   | a | b |\n   |---|---|\n   ```\n2. Done",
			[]mdPart{prose("1. Run\n   ```\n   | a | b |\n   |---|---|\n   ```\n2. Done")}},
		{"indented table stays in the list", "- x\n  | a |\n  |---|", []mdPart{prose("- x\n  | a |\n  |---|")}},
	} {
		if got := splitMarkdown(c.md); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestChatDrawsTablesAndCode: a reply with a table and a code block shows the
// table as a grid of its cells, no pipes or dashes on screen, and the code in a
// box whose Copy code puts the code alone on the clipboard. Fyne's markdown
// drew the table as one paragraph: "| Name | Size | |---|---| | int4 | …".
func TestChatDrawsTablesAndCode(t *testing.T) {
	answer := "Two profiles:\n\n| Profile | Download |\n|---|---|\n| **int4** | 17 GB |\n| bf16 | 52 GB |\n\nTo get one:\n\n```sh\ndarkroom pull gemma\n```\n"
	a := newTestApp(t, &fakeModel{answers: func(engine.Request) string { return answer }}, "")
	c := a.Chat
	typeText(c.input, "Which profile?")
	tap(c.send)
	c.run.Wait()
	var texts []string
	var copyCode *widget.Button
	uiMu.Lock()
	walkObjects(c.messages.Objects[1], func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.RichText:
			texts = append(texts, x.String())
		case *widget.Button:
			if x.Text == "Copy code" {
				copyCode = x
			}
		}
	})
	uiMu.Unlock()
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Profile", "Download", "int4", "17 GB", "bf16", "52 GB", "darkroom pull gemma", "To get one:"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q not on screen; shown:\n%s", want, all)
		}
	}
	for _, junk := range []string{"|", "---", "```", "**"} {
		if strings.Contains(all, junk) {
			t.Errorf("%q on screen:\n%s", junk, all)
		}
	}
	if !slices.Contains(texts, "int4") || !slices.Contains(texts, "Profile") {
		t.Errorf("the cells are not each their own text: %q", texts)
	}
	if copyCode == nil {
		t.Fatal("no Copy code on the code block")
	}
	tap(copyCode)
	if got := a.fyneApp.Clipboard().Content(); got != "darkroom pull gemma" {
		t.Errorf("Copy code put %q on the clipboard", got)
	}
	if got := uiRead(func() string { return c.status.Text }); got != "Code copied to the clipboard" {
		t.Errorf("status %q", got)
	}
	// The reply's own Copy still copies the whole reply, as written.
	if got := c.Current().Messages[1].Content; got != strings.TrimSpace(answer) {
		t.Errorf("saved %q", got)
	}
}
