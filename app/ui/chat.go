package ui

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/chats"
	"github.com/darkroomlabs/darkroom/app/develop"
	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/plural"
	"github.com/darkroomlabs/darkroom/assets"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/models/catalog"
)

// Chat is plain local chat: threads on disk, markdown messages, send / stop /
// regenerate, a system prompt per thread and a thinking toggle where the model has
// a thinking channel. The answer develops canvas by canvas.
type Chat struct {
	app *App
	// reading counts the attached files being read (readAttachments).
	reading sync.WaitGroup
	// dayTimer redraws the list at midnight (tickDays).
	dayTimer *time.Timer

	threads  []*chats.Thread
	cur      *chats.Thread
	list     *widget.List
	loadErrs *widget.Label
	// search, over the list, finds chats by what was said in them
	// (chats.Thread.Match); shown are the threads the list shows (all of them
	// when the box is empty), snippets where each matched when its title does
	// not show it, noMatch what the list says when none does.
	search   *keyEntry
	shown    []*chats.Thread
	snippets []string
	noMatch  *widget.Label

	system   *keyEntry
	thinking *widget.Check
	mode     *widget.Select // Automatic (the model's default here), or a mode the user picked
	messages *fyne.Container
	scroll   *container.Scroll
	live     *widget.Label // the canvas developing now (plain text, noise dimmed), in the reply's bubble
	input    *chatInput
	send     *widget.Button
	stop     *widget.Button
	regen    *widget.Button
	del      *widget.Button // deletes the open thread; one with messages can be brought back (undoBar)
	rename   *widget.Button // asks for the open thread's new name
	export   *widget.Button // saves the open thread as a Markdown file (ExportChat)
	// attachBtn, the paperclip beside the chat box, puts a text file in it (AttachFile).
	attachBtn *widget.Button
	status    *widget.Label
	errLabel  *widget.Label
	// after, the row under the last answer: over an entry's answer, "Let the
	// model answer" (and "Show the entry" back); under one the model wrote
	// alone about a topic a typo away from an entry, links that ask about the
	// entries it may have meant (assets.Leads.ChatSimilar).
	after *fyne.Container
	own   bool // the next answer is the model's alone, without the entry (the after row's button)
	// continued is the answer Continue goes on from (ContinueAnswer), out of
	// the thread while the model writes; it comes back as it was if that fails.
	continued *chats.Message
	// undoBar, under the thread list, says which chat was deleted and offers
	// Undo, until the user goes on (sends, starts or picks a chat) or deletes
	// another; deleted is that chat, as it was.
	undoBar  *fyne.Container
	undoNote *widget.Label
	deleted  *chats.Thread
	// other is the answer Regenerate replaced in the open thread (after a swap,
	// the newer one), which SwapAnswer brings back.
	// Kept until the thread is left or a message sent.
	other otherVersion[chats.Message]
	swap  *widget.Button // "Previous answer" / "Newer answer" at the last answer's foot; nil when not offered
	// editing is the index of the user message being edited (its Edit button
	// put it in the chat box; Send replaces it and what follows), -1 for none;
	// editBar says so over the chat box, with Cancel.
	editing   int
	editBar   *fyne.Container
	content   fyne.CanvasObject
	run       runner
	answering bool
}

func newChat(a *App) *Chat {
	c := &Chat{app: a, editing: -1}
	c.loadErrs = widget.NewLabel("")
	c.loadErrs.Wrapping = fyne.TextWrapWord
	c.loadErrs.Importance = widget.DangerImportance
	c.loadErrs.Hide()
	c.list = widget.NewList(
		func() int { return len(c.shown) },
		func() fyne.CanvasObject { return newThreadRow() },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(c.shown) {
				setThreadRow(o, c.shown[i].Title, whenText(c.shown[i].Updated, time.Now()), c.snippets[i])
			}
		})
	c.list.OnSelected = func(i widget.ListItemID) {
		if i < len(c.shown) && c.shown[i] != c.cur {
			c.forgetDeleted()
			c.open(c.shown[i])
		}
	}
	c.search = newKeyEntry(a)
	c.search.SetPlaceHolder("Search chats (" + keyHint("F") + ")")
	c.search.ActionItem = widget.NewButtonWithIcon("", theme.ContentClearIcon(), func() { c.search.SetText("") })
	c.search.onEscape = func() bool { // Escape empties the box first, then stops as elsewhere
		if c.search.Text == "" {
			return false
		}
		c.search.SetText("")
		return true
	}
	c.search.OnChanged = func(string) { c.refreshList() }
	c.noMatch = widget.NewLabel("")
	c.noMatch.Wrapping = fyne.TextWrapWord
	c.noMatch.Hide()
	newBtn := widget.NewButtonWithIcon("New chat", theme.ContentAddIcon(), c.StartNew)
	c.del = widget.NewButtonWithIcon("", theme.DeleteIcon(), c.deleteCurrent)
	c.rename = widget.NewButtonWithIcon("", theme.DocumentCreateIcon(), c.askRename)
	c.export = widget.NewButtonWithIcon("", theme.DocumentSaveIcon(), c.ExportChat)
	c.undoNote = widget.NewLabel("")
	c.undoNote.Wrapping = fyne.TextWrapWord
	c.undoBar = container.NewBorder(nil, nil, nil, widget.NewButtonWithIcon("Undo", theme.ContentUndoIcon(), c.UndoDelete), c.undoNote)
	c.undoBar.Hide()
	left := container.NewBorder(container.NewVBox(container.NewBorder(nil, nil, nil, container.NewHBox(c.export, c.rename, c.del), newBtn), c.search),
		container.NewVBox(c.undoBar, c.loadErrs), nil, nil, container.NewStack(c.list, container.NewVBox(c.noMatch)))

	c.system = newKeyEntry(a)
	c.system.MultiLine = true
	c.system.SetMinRowsVisible(5)
	c.system.Wrapping = fyne.TextWrapWord
	c.system.OnChanged = func(s string) {
		if c.cur != nil && c.cur.System != s {
			c.cur.System = s
			c.save()
		}
	}
	c.thinking = widget.NewCheck("Thinking", func(on bool) {
		if c.cur != nil && c.cur.Thinking != on {
			c.cur.Thinking = on
			c.save()
		}
	})
	c.mode = widget.NewSelect([]string{modeAuto, modeLabel(engine.Diffusion), modeLabel(engine.AR)}, nil)
	c.mode.SetSelected(modeAuto)
	c.mode.OnChanged = func(label string) { // the chat's, as its system prompt is
		if m := pickedMode(label); c.cur != nil && c.cur.Mode != m {
			c.cur.Mode = m
			c.save()
		}
	}
	c.messages = container.NewVBox()
	c.live = widget.NewLabel("")
	c.live.Wrapping = fyne.TextWrapWord
	c.live.TextStyle = fyne.TextStyle{Monospace: true}
	c.live.Hide()
	c.scroll = container.NewVScroll(container.NewPadded(c.messages))
	c.input = newChatInput(a, c.Send, c.CancelEdit)
	c.input.SetPlaceHolder("Ask something… (Enter sends, Shift+Enter starts a new line)")
	c.input.SetMinRowsVisible(2)
	c.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), c.Send)
	c.send.Importance = widget.HighImportance
	c.input.OnChanged = func(string) { c.updateButtons() } // Send is on once there is something to send
	c.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), c.Stop)
	c.stop.Disable()
	c.regen = widget.NewButtonWithIcon("Regenerate", theme.ViewRefreshIcon(), c.Regenerate)
	c.status = widget.NewLabel("")
	c.status.Truncation = fyne.TextTruncateEllipsis
	c.errLabel = widget.NewLabel("")
	c.errLabel.Wrapping = fyne.TextWrapWord
	c.errLabel.Importance = widget.DangerImportance
	c.errLabel.Hide()

	sysBox := widget.NewAccordion(widget.NewAccordionItem("System prompt", c.system))
	top := container.NewVBox(a.modelNotice(), container.NewBorder(nil, nil, nil, container.NewHBox(fitOptions(c.mode), c.thinking), sysBox), c.errLabel)
	buttons := container.NewHBox(c.regen, c.stop, c.send)
	c.after = container.NewHBox()
	c.after.Hide()
	editNote := widget.NewLabel(editingNote)
	editNote.Wrapping = fyne.TextWrapWord
	c.editBar = container.NewBorder(nil, nil, nil, widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), c.CancelEdit), editNote)
	c.editBar.Hide()
	c.attachBtn = widget.NewButtonWithIcon("", theme.FileTextIcon(), c.AttachFile) // a text file into the message (chat_attach.go)
	bottom := container.NewVBox(c.after, c.editBar, container.NewBorder(nil, nil, c.attachBtn, buttons, c.input), c.status)
	right := container.NewBorder(top, bottom, nil, nil, c.scroll)
	split := container.NewHSplit(left, right)
	split.Offset = 0.22
	c.content = split
	c.reload()
	c.tickDays()
	return c
}

// tickDays redraws the list's rows just after each local midnight, so that
// their days move on ("14:02" becomes "Yesterday") in a window left open
// overnight; they stayed until the list was next refreshed. The App's
// shutdown stops it.
func (c *Chat) tickDays() {
	c.dayTimer = time.AfterFunc(untilNextDay(time.Now()), func() {
		onUI(func() {
			if c.dayTimer == nil { // the app shut down
				return
			}
			c.list.Refresh()
			c.tickDays()
		})
	})
}

// untilNextDay is the time from now to a second past the next local midnight.
func untilNextDay(now time.Time) time.Duration {
	now = now.Local()
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 1, 0, time.Local)
	return next.Sub(now)
}

// reload reads the threads from disk; a corrupt file is reported for that thread.
func (c *Chat) reload() {
	c.threads = nil
	if c.app.deps.Chats == nil {
		c.loadErrs.SetText("Chats are not saved: the chats folder could not be opened.")
		c.loadErrs.Show()
	} else {
		threads, errs := c.app.deps.Chats.List()
		c.threads = threads
		if len(errs) > 0 {
			var lines []string
			for _, e := range errs {
				lines = append(lines, e.Error())
			}
			c.loadErrs.SetText(strings.Join(lines, "\n"))
			c.loadErrs.Show()
		}
	}
	c.openNewest()
}

// openNewest shows the newest thread the list shows (the newest of all when a
// search shows none), or a new one where there is none.
func (c *Chat) openNewest() {
	c.filterList()
	switch {
	case len(c.shown) > 0:
		c.open(c.shown[0])
	case len(c.threads) > 0:
		c.open(c.threads[0])
	default:
		c.NewThread()
		return
	}
	c.selectOpen()
}

// refreshList shows the threads the search box matches (all when it is empty),
// each with where it matched, and selects the open thread where it is shown.
func (c *Chat) refreshList() {
	c.filterList()
	c.selectOpen()
}

// filterList is refreshList's first half: the threads the search box matches,
// with where, into the list.
func (c *Chat) filterList() {
	q := c.search.Text
	c.shown, c.snippets = nil, nil
	for _, t := range c.threads {
		if snippet, ok := t.Match(q); ok {
			c.shown = append(c.shown, t)
			c.snippets = append(c.snippets, snippet)
		}
	}
	if strings.TrimSpace(q) != "" && len(c.shown) == 0 {
		c.noMatch.SetText(fmt.Sprintf("No chat holds “%s”.", strings.TrimSpace(q)))
		c.noMatch.Show()
	} else {
		c.noMatch.Hide()
	}
	one, two := threadRowHeights()
	for i, snippet := range c.snippets {
		if snippet != "" {
			c.list.SetItemHeight(i, two)
		} else {
			c.list.SetItemHeight(i, one)
		}
	}
	c.list.Refresh()
}

// selectOpen is refreshList's second half: the open thread selected in the list
// where it is shown, none selected where it is not.
func (c *Chat) selectOpen() {
	if at := slices.Index(c.shown, c.cur); at >= 0 && c.cur != nil {
		c.list.Select(at) // the open thread: OnSelected leaves it be
	} else {
		c.list.UnselectAll()
	}
}

// Shown returns the threads the list shows, newest first: those the search box
// matches.
func (c *Chat) Shown() []*chats.Thread { return c.shown }

// FocusSearch puts the focus in the search box over the chat list (Ctrl+F).
func (c *Chat) FocusSearch() { c.app.win.Canvas().Focus(c.search) }

// newThreadRow is a row of the chat list: the thread's title, and under it,
// during a search, where the thread matched.
func newThreadRow() fyne.CanvasObject {
	title := widget.NewLabel("thread title")
	title.Truncation = fyne.TextTruncateEllipsis
	when := widget.NewLabel("Yesterday")
	secondaryText(when)
	snippet := widget.NewLabel("")
	snippet.Truncation = fyne.TextTruncateEllipsis
	snippet.SizeName = theme.SizeNameCaptionText
	snippet.TextStyle = fyne.TextStyle{Italic: true}
	snippet.Hide()
	return container.NewVBox(container.NewBorder(nil, nil, nil, when, title), snippet)
}

// rowTitle and rowWhen are a newThreadRow's title and date labels (a Border
// container holds its centre first, then its right side).
func rowTitle(row *fyne.Container) *widget.Label {
	return row.Objects[0].(*fyne.Container).Objects[0].(*widget.Label)
}
func rowWhen(row *fyne.Container) *widget.Label {
	return row.Objects[0].(*fyne.Container).Objects[1].(*widget.Label)
}

// setThreadRow shows title, when (the chat's last change, whenText) and snippet
// ("" for none) in a newThreadRow.
func setThreadRow(o fyne.CanvasObject, title, when, snippet string) {
	row := o.(*fyne.Container)
	rowTitle(row).SetText(title)
	rowWhen(row).SetText(when)
	s := row.Objects[1].(*widget.Label)
	s.SetText(snippet)
	if snippet == "" {
		s.Hide()
	} else {
		s.Show()
	}
	row.Refresh() // laid out again: a label shown keeps the place it had hidden
}

// threadRowHeights are a list row's heights with the title alone and with a
// snippet under it.
func threadRowHeights() (one, two float32) {
	row := newThreadRow()
	one = row.MinSize().Height
	setThreadRow(row, "title", "Yesterday", "snippet")
	return one, row.MinSize().Height
}

// whenText is when a chat last changed, as its row in the list says it, by
// the local clock: "14:02" today, "Yesterday", the weekday within a week, the
// day and month this year, else with the year too; "" for never.
func whenText(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	t, now = t.Local(), now.Local()
	day := func(x time.Time) time.Time { return time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.Local) }
	switch days := int(day(now).Sub(day(t)).Hours()/24 + 0.5); {
	case days <= 0:
		return t.Format("15:04")
	case days == 1:
		return "Yesterday"
	case days < 7:
		return t.Format("Monday")
	case t.Year() == now.Year():
		return t.Format("2 Jan")
	default:
		return t.Format("2 Jan 2006")
	}
}

// Threads returns the loaded threads, newest first.
func (c *Chat) Threads() []*chats.Thread { return c.threads }

// Current returns the thread shown.
func (c *Chat) Current() *chats.Thread { return c.cur }

// NewThread opens an empty thread with the default system prompt at the top
// of the list: one already waiting there untouched when there is one (each
// click of New chat used to add another empty "New chat"), else a new one.
func (c *Chat) NewThread() {
	fresh := chats.New(newChatTitle, c.defaultSystem())
	t, rest := fresh, c.threads
	for i, old := range c.threads {
		if len(old.Messages) == 0 && old.Title == fresh.Title && old.System == fresh.System && old.Mode == fresh.Mode && old.Thinking == fresh.Thinking {
			t, rest = old, append(append([]*chats.Thread(nil), c.threads[:i]...), c.threads[i+1:]...)
			break
		}
	}
	c.threads = append([]*chats.Thread{t}, rest...)
	c.open(t)
	c.search.SetText("") // a search would hide the new chat
	c.refreshList()
}

// StartNew is New chat (the button, Ctrl+N): an empty thread, the chat box
// focused for its first message.
func (c *Chat) StartNew() {
	c.forgetDeleted()
	c.NewThread()
	c.app.win.Canvas().Focus(c.input)
}

func (c *Chat) defaultSystem() string {
	if c.app.activeModelName() == miniName {
		return catalog.System(catalog.MiniID)
	}
	return ""
}

func (c *Chat) open(t *chats.Thread) {
	c.run.Stop()
	c.run.Invalidate()
	if c.answering && c.cur != nil { // the answer being written is dropped: the chat left stays as it was
		c.putBack(c.cur)
	}
	c.answering = false
	c.other.forget() // the answer Regenerate replaced is the thread left's
	c.editing = -1
	c.editBar.Hide()
	c.cur = t
	c.system.SetText(t.System)
	c.thinking.SetChecked(t.Thinking)
	c.updateThinking()
	c.mode.SetSelected(pickedLabel(t.Mode))
	c.live.Hide()
	c.errLabel.Hide()
	c.after.Hide()
	c.status.SetText("")
	c.renderMessages()
	c.updateButtons()
}

// SwapAnswer ("Previous answer" at the last answer's foot) brings back the
// answer the last Regenerate replaced, and "Newer answer" the one it wrote;
// the thread is saved with the answer shown.
func (c *Chat) SwapAnswer() {
	t := c.cur
	if c.answering || t == nil || !c.other.has() || len(t.Messages) == 0 || t.Messages[len(t.Messages)-1].Role != "model" {
		return
	}
	n := len(t.Messages)
	t.Messages[n-1] = c.other.swap(t.Messages[n-1]) // the answer on screen becomes the other
	c.save()
	c.errLabel.Hide()
	c.after.Hide() // its offers were the other answer's
	c.status.SetText("")
	c.renderMessages()
	c.updateButtons()
}

// withSwap is the last answer's view with "Previous answer" (or "Newer
// answer": SwapAnswer) at its foot, where ChatGPT shows an answer's versions.
func (c *Chat) withSwap(view fyne.CanvasObject) fyne.CanvasObject {
	c.swap = widget.NewButtonWithIcon(c.other.label("answer"), theme.HistoryIcon(), c.SwapAnswer)
	c.swap.Importance = widget.LowImportance
	return container.NewVBox(view, container.NewHBox(c.swap))
}

// ExportChat (the save icon over the list) asks where to save the open chat as
// a Markdown file (chats.Thread.Markdown), named after it.
func (c *Chat) ExportChat() {
	t := c.cur
	if t == nil || len(t.Messages) == 0 {
		return
	}
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) { c.writeExport(t, w, err) }, c.app.win)
	d.SetFileName(t.FileName(".md"))
	d.Show()
}

// writeExport is ExportChat's answer from the file dialog: t's Markdown into w
// (nil: the dialog was cancelled), then the status line says where it went, or
// the error stays on screen.
func (c *Chat) writeExport(t *chats.Thread, w fyne.URIWriteCloser, err error) {
	if err == nil && w == nil {
		return
	}
	if err == nil {
		_, err = io.WriteString(w, t.Markdown())
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		c.showError(fmt.Sprintf("Could not save the chat: %v. Choose another folder and try again.", err))
		return
	}
	c.status.SetText("Chat saved to " + w.URI().Path())
}

// editingNote is what the bar over the chat box says while a message is edited.
const editingNote = "Editing your message: Send replaces it and the answers after it (Escape leaves it as it was)."

// EditMessage puts the user message at index i of the open thread in the chat
// box to edit; Send then replaces it and drops what followed (the answers to
// it), as ChatGPT, LM Studio and Jan do. Nothing changes until Send; Cancel
// leaves the thread as it was.
func (c *Chat) EditMessage(i int) {
	if c.answering || c.cur == nil || i < 0 || i >= len(c.cur.Messages) || c.cur.Messages[i].Role != "user" {
		return
	}
	c.editing = i
	c.input.SetText(c.cur.Messages[i].Content)
	c.editBar.Show()
	c.app.win.Canvas().Focus(c.input)
}

// CancelEdit leaves the message being edited as it was and empties the chat box.
func (c *Chat) CancelEdit() {
	if c.editing < 0 {
		return
	}
	c.editing = -1
	c.editBar.Hide()
	c.input.SetText("")
}

// newChatTitle names a chat until its first message does.
const newChatTitle = "New chat"

// askRename asks for the open chat's new name (the pencil beside the trash
// icon): prefilled and focused; Enter or Rename keeps it, an empty name changes
// nothing.
func (c *Chat) askRename() {
	t := c.cur
	if t == nil {
		return
	}
	box := widget.NewEntry()
	box.SetText(t.Title)
	d := dialog.NewForm("Rename this chat", "Rename", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("Name", box)},
		func(ok bool) {
			name := titleFrom(box.Text)
			if !ok || name == "" || name == t.Title {
				return
			}
			t.Title = name
			if c.cur == t {
				c.save()
			} else if c.app.deps.Chats != nil && len(t.Messages) > 0 {
				_ = c.app.deps.Chats.Save(t)
			}
			c.refreshList()
		}, c.app.win)
	box.OnSubmitted = func(string) { d.Submit() }
	d.Resize(fyne.NewSize(scaled(420, 0).Width, d.MinSize().Height))
	d.Show()
	c.app.win.Canvas().Focus(box)
}

// deleteCurrent deletes the open thread (the trash icon) at once; one with
// messages can be brought back with Undo in the bar under the list, which says
// which chat went — as mail apps do, rather than a dialog to confirm (which
// Darkroom asked until session 28; an empty chat has nothing to bring back).
func (c *Chat) deleteCurrent() {
	t := c.cur
	if t == nil {
		return
	}
	if c.app.deps.Chats != nil {
		if err := c.app.deps.Chats.Delete(t.ID); err != nil {
			c.showError(err.Error())
			return
		}
	}
	for i, x := range c.threads {
		if x == t {
			c.threads = append(c.threads[:i], c.threads[i+1:]...)
			break
		}
	}
	c.forgetDeleted()
	if len(t.Messages) > 0 {
		c.deleted = t
		c.undoNote.SetText(fmt.Sprintf("Deleted “%s” (%s).", t.Title, plural.Count(len(t.Messages), "message", "messages")))
		c.undoBar.Show()
	}
	c.cur = nil
	c.openNewest()
}

// UndoDelete brings back the chat deleted last (the Undo under the list): saved
// again as it was, in its place in the list, and opened.
func (c *Chat) UndoDelete() {
	t := c.deleted
	if t == nil {
		return
	}
	if c.app.deps.Chats != nil {
		if err := c.app.deps.Chats.Save(t); err != nil {
			c.showError(err.Error())
			return
		}
	}
	c.forgetDeleted()
	at := len(c.threads) // newest first, as List reads them
	for i, x := range c.threads {
		if !x.Updated.After(t.Updated) {
			at = i
			break
		}
	}
	c.threads = slices.Insert(c.threads, at, t)
	c.open(t)
	c.refreshList()
}

// forgetDeleted hides the Undo bar: the user went on.
func (c *Chat) forgetDeleted() {
	c.deleted = nil
	c.undoBar.Hide()
}

// updateThinking enables the toggle only where the loaded model has the channel.
// updateThinking offers Thinking where the model has a thinking channel, and
// before a downloaded model has loaded, when that is not known yet (a box greyed
// until a first answer had loaded the model kept a chat from starting with it);
// the built-in Mini has none.
func (c *Chat) updateThinking() {
	m := c.app.models.Loaded()
	if m != nil && m.Info().Thinking || m == nil && c.app.activeModelName() != miniName {
		c.thinking.Enable()
	} else {
		c.thinking.Disable()
	}
}

// save writes the open thread (one with messages) to disk, stamped as the
// newest, and puts it at the top of the list.
func (c *Chat) save() {
	if c.app.deps.Chats == nil || c.cur == nil || len(c.cur.Messages) == 0 {
		return
	}
	c.cur.Updated = time.Now().UTC()
	if err := c.app.deps.Chats.Save(c.cur); err != nil {
		c.showError(err.Error())
	}
	// Now the newest, it goes to the top of the list, where the next start lists
	// it (Store.List: newest first); it stayed in its place until then.
	if i := slices.Index(c.threads, c.cur); i > 0 {
		c.threads = slices.Insert(slices.Delete(c.threads, i, i+1), 0, c.cur)
		c.refreshList()
	}
}

func (c *Chat) showError(msg string) {
	c.errLabel.SetText(msg)
	showWrapped(c.errLabel, c.scroll.Size().Width, c.content) // the answers' column, as wide as the error's
}

func (c *Chat) renderMessages() {
	var objs []fyne.CanvasObject
	name := c.app.activeModelName()
	c.swap = nil
	last := len(c.cur.Messages) - 1
	for i, m := range c.cur.Messages {
		v := c.messageView(m, name, nil, func() { c.EditMessage(i) })
		if i == last && m.Role == "model" && c.other.has() && !c.answering {
			v = c.withSwap(v)
		}
		if i == c.cur.ReadFrom && i > 0 { // (in the first message read's place: showPartial counts places)
			v = container.NewVBox(c.leftOutNote(), v)
		}
		objs = append(objs, v)
	}
	c.messages.Objects = objs
	c.messages.Refresh()
	c.scroll.ScrollToBottom()
}

// leftOutNote is the line over the first message the model read for its last
// answer, where the chat had grown past what it reads at once (Thread.ReadFrom).
func (c *Chat) leftOutNote() fyne.CanvasObject {
	l := widget.NewLabel(leftOutText)
	l.Wrapping = fyne.TextWrapWord
	secondaryText(l)
	return container.NewVBox(widget.NewSeparator(), l)
}

// leftOutText is leftOutNote's text.
const leftOutText = "The model no longer reads the messages above: this chat has grown longer than it reads at once, " +
	"so it answers from the messages below. A New chat starts afresh."

// messageView draws one message as a bubble: who wrote it, a reply's thinking,
// the markdown body, then live (the canvas still developing, if not nil), and a
// copy button on replies; edit, if not nil, is a user message's Edit button.
func (c *Chat) messageView(m chats.Message, model string, live fyne.CanvasObject, edit func()) fyne.CanvasObject {
	who := widget.NewLabelWithStyle("You", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	var head fyne.CanvasObject = who
	fill := theme.Color(theme.ColorNameSelection)
	if m.Role == "user" && edit != nil { // Edit (EditMessage) where Copy is on an answer
		editB := widget.NewButtonWithIcon("Edit", theme.DocumentCreateIcon(), edit)
		editB.Importance = widget.LowImportance
		head = container.NewBorder(nil, nil, nil, editB, who)
	}
	if m.Role == "model" {
		who.SetText(model)
		who.Importance = widget.HighImportance
		fill = theme.Color(theme.ColorNameInputBackground)
		content := m.Content
		copyB := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
			c.app.fyneApp.Clipboard().SetContent(content)
			c.status.SetText("Reply copied to the clipboard")
		})
		copyB.Importance = widget.LowImportance
		if content == "" || live != nil {
			copyB.Hide() // nothing to copy yet
		}
		head = container.NewBorder(nil, nil, nil, copyB, who)
	}
	render := markdownText
	if m.Role == "model" {
		render = answerText
	}
	body := messageBody(m.Content, render, func(text, note string) {
		c.app.fyneApp.Clipboard().SetContent(text)
		c.status.SetText(note)
	})
	parts := []fyne.CanvasObject{head}
	if m.Thought != "" {
		th := widget.NewLabel(m.Thought)
		th.Wrapping = fyne.TextWrapWord
		secondaryText(th)
		parts = append(parts, widget.NewAccordion(widget.NewAccordionItem("Thinking", th)))
	}
	parts = append(parts, body)
	if live != nil {
		parts = append(parts, live)
	}
	bg := canvas.NewRectangle(fill)
	bg.CornerRadius = theme.InputRadiusSize() * 2
	return container.NewPadded(container.NewStack(bg, container.NewPadded(container.NewVBox(parts...))))
}

// chatInput is the message box: Enter sends, Shift+Enter starts a new line, as
// in ChatGPT, LM Studio and Jan (Fyne's multi-line entry does the reverse).
type chatInput struct {
	keyEntry // the app's keys (Escape stops the reply) reach the app
	send     func()
	escape   func() // Escape in the box, besides stopping: leaves an edit (Chat.CancelEdit)
	shift    bool   // a Shift key is held
}

func newChatInput(a *App, send, escape func()) *chatInput {
	e := &chatInput{keyEntry: keyEntry{app: a}, send: send, escape: escape}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.ExtendBaseWidget(e)
	return e
}

// KeyDown implements desktop.Keyable, noting Shift.
func (e *chatInput) KeyDown(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = true
	}
	e.Entry.KeyDown(k)
}

// KeyUp implements desktop.Keyable.
func (e *chatInput) KeyUp(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = false
	}
	e.Entry.KeyUp(k)
}

// TypedKey sends on Enter, types a newline on Shift+Enter, and on Escape
// leaves a message being edited as well as stopping the reply.
func (e *chatInput) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape && e.escape != nil {
		e.escape()
	}
	if k.Name != fyne.KeyReturn && k.Name != fyne.KeyEnter {
		e.keyEntry.TypedKey(k)
		return
	}
	if e.shift {
		// The entry, told Shift is down, would treat the newline as extending a
		// selection from where Shift went down: let it type it unshifted.
		shift := &fyne.KeyEvent{Name: desktop.KeyShiftLeft}
		e.Entry.KeyUp(shift)
		e.Entry.TypedKey(k)
		e.Entry.KeyDown(shift)
		return
	}
	e.send()
}

func (c *Chat) updateButtons() {
	setEnabled(c.send, !c.answering && strings.TrimSpace(c.input.Text) != "")
	setEnabled(c.stop, c.answering)
	setEnabled(c.regen, !c.answering && c.cur != nil && len(c.cur.Messages) > 0)
	setEnabled(c.export, c.cur != nil && len(c.cur.Messages) > 0)
}

// Send sends the input as a user turn and starts the answer.
func (c *Chat) Send() {
	text := strings.TrimSpace(c.input.Text)
	if text == "" || c.answering || c.cur == nil {
		return
	}
	c.input.SetText("")
	c.own = false // a new question opens with its entry, where the folder holds one
	c.forgetDeleted()
	c.other.forget() // the answers to swap were to the question before
	if i := c.editing; i >= 0 && i < len(c.cur.Messages) && c.cur.Messages[i].Role == "user" {
		if i == 0 && c.cur.Title == titleFrom(c.cur.Messages[0].Content) { // named by the message, not by the user
			c.cur.Title = newChatTitle
		}
		c.cur.Messages = c.cur.Messages[:i] // the edited message and what followed it go
	}
	c.editing = -1
	c.editBar.Hide()

	if len(c.cur.Messages) == 0 && c.cur.Title == newChatTitle { // not one the user named
		c.cur.Title = titleFrom(text)
	}
	c.cur.Messages = append(c.cur.Messages, chats.Message{Role: "user", Content: text, Time: time.Now().UTC()})
	c.refreshList() // its title, and what a search finds in it
	c.save()
	c.renderMessages()
	c.answer()
}

// putBack returns to t the answer a Continue or a Regenerate took out of it
// for another to replace, where that one never came — it failed, or the chat
// was left while it was written (the answer, and with Continue the next one in
// any chat, was lost) — and says whether there was one, and whether it was a
// cut answer Continue went on from (Continue is offered again).
func (c *Chat) putBack(t *chats.Thread) (restored, cut bool) {
	switch {
	case c.continued != nil: // (before other: a regenerated answer may have been continued)
		t.Messages = append(t.Messages, *c.continued)
		c.continued = nil
		return true, true
	case c.other.has() && !c.other.newer:
		t.Messages = append(t.Messages, c.other.take())
		return true, false
	}
	return false, false
}

// ContinueAnswer ("Continue" under an answer cut at its length limit) has the
// model go on from where the answer stopped: the answer so far is held as the
// opening of the next (engine.Request.OpeningExtra: max new tokens more may
// follow it) and the whole replaces it; if that fails, the answer stays as it
// was. A cut answer otherwise had to be asked for again, from the start.
func (c *Chat) ContinueAnswer() {
	t := c.cur
	if c.answering || t == nil || len(t.Messages) == 0 || t.Messages[len(t.Messages)-1].Role != "model" {
		return
	}
	last := t.Messages[len(t.Messages)-1]
	t.Messages = t.Messages[:len(t.Messages)-1]
	c.continued = &last
	c.renderMessages()
	c.answer()
}

// Regenerate drops the last answer and asks again.
func (c *Chat) Regenerate() { c.regenerate(true) }

// regenerate asks for the last answer again; keep keeps the answer it replaces
// for "Previous answer" (SwapAnswer).
func (c *Chat) regenerate(keep bool) {
	if c.answering || c.cur == nil {
		return
	}
	if n := len(c.cur.Messages); n > 0 && c.cur.Messages[n-1].Role == "model" {
		if keep {
			c.other.keep(c.cur.Messages[n-1])
		} else {
			c.other.forget()
		}
		c.cur.Messages = c.cur.Messages[:n-1]
	}
	if len(c.cur.Messages) == 0 {
		return
	}
	c.save()
	c.renderMessages()
	c.answer()
}

// Stop cancels the answer; what was committed is kept.
func (c *Chat) Stop() { c.run.Stop() }

// titleFrom is a chat's title made from its first message: the message on one
// line, cut at 40 characters.
func titleFrom(s string) string {
	// A message with files attached is titled by its own words, after the
	// files' names ("notes.txt: What do I have to do?"), not the files' text.
	if rest, names := chats.Unattach(s); len(names) > 0 {
		s = strings.Join(names, ", ")
		if rest != "" {
			s += ": " + rest
		}
	}
	s = assets.CleanLine(s)
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return s
}

// answer generates the model's turn for the current thread.
func (c *Chat) answer() {
	t := c.cur
	var msgs []engine.Message
	if sys := strings.TrimSpace(t.System); sys != "" {
		msgs = append(msgs, engine.Message{Role: "system", Content: sys})
	}
	for _, m := range t.Messages {
		msgs = append(msgs, engine.Message{Role: m.Role, Content: m.Content})
	}
	thinking := t.Thinking && !c.thinking.Disabled()
	picked := c.mode.Selected
	own := c.own
	c.own = false
	cont := c.continued // Continue: the answer so far, held as the opening of this one
	if cont != nil {
		thinking = false
	}
	c.answering = true
	c.errLabel.Hide()
	c.after.Hide()
	c.updateButtons()
	c.status.SetText("Starting…")
	c.run.Start(func(ctx context.Context, seq int64) {
		current := func() bool { return c.run.Current(seq) && c.cur == t }
		m, err := c.app.loadModel(ctx, current, c.status)
		if err != nil {
			c.finish(current, t, nil, fmt.Errorf("load the model: %w", err), "", false, askedAbout{})
			return
		}
		onUI(c.updateThinking)
		thinking = thinking && m.Info().Thinking // ticked before the model was known to have it
		// The mode: the faster one here where the model writes equally well both ways.
		info := m.Info()
		mode := info.defaultMode()
		switch picked {
		case modeLabel(engine.Diffusion):
			mode, info.Mode.Reason = engine.Diffusion, "the polaroid (diffusion), as chosen"
		case modeLabel(engine.AR):
			mode, info.Mode.Reason = engine.AR, "the printer (AR), as chosen"
		}
		label := modeLabel(mode)
		if info.OneMode != "" && mode != engine.AR { // (AR is refused there, in words)
			label, info.Mode.Reason = serverModeLabel, ""
		}
		// A question about a topic opens its answer with the topic as its bold
		// heading and, where the model's folder holds the entry, the entry's
		// opening sentences, as the chat examples answered; the model
		// writes what follows (assets.Leads.ChatStart; not before a thinking
		// channel's thoughts).
		var start assets.ChatStart
		var asked askedAbout
		if last := t.Messages[len(t.Messages)-1]; last.Role == "user" && !thinking {
			start = info.Leads.ChatStart(last.Content)
			asked = askedAbout{similar: info.Leads.ChatSimilar(last.Content, develop.SimilarMax), entry: start.Lead != "", own: own}
			if own { // the model alone, as `darkroom generate --no-lead` asks
				start = assets.ChatStart{}
			}
		}
		if cont != nil { // going on from the answer so far: it is the opening, no entry nor heading
			start, asked = assets.ChatStart{Opening: cont.Content}, askedAbout{}
		}
		dev := develop.New(m, m.Decode)
		th := newThrottle(frameInterval, func(ev engine.Event) {
			text := dev.Text(ev)
			committed := dev.Committed()
			live := ""
			if ev.Kind == engine.EventStep {
				live = htmlsafe.ShowNoise(strings.TrimPrefix(text, committed))
			}
			st := label + " · " + dev.Status(ev)
			onUI(func() {
				if !current() {
					return
				}
				c.live.SetText(live)
				c.live.Show()
				c.showPartial(t, chat.Parse(committed).Text)
				c.status.SetText(st)
				c.scroll.ScrollToBottom()
			})
		})
		if info.Mode.Reason != "" {
			onUI(func() {
				if current() {
					c.status.SetText("Writing with " + info.Mode.Reason)
				}
			})
		}
		sampling := c.app.sampling()
		if sampling.MaxNewTokens == 0 { // none set in Settings: an answer's, not one canvas
			sampling.MaxNewTokens = info.AnswerTokens
		}
		res, err := m.Generate(ctx, engine.Request{Messages: msgs, Thinking: thinking, Mode: mode, Opening: start.Opening, Lead: start.Lead, LeadEnds: start.Lead != "", OpeningTentative: start.OpeningTentative, Reply: start.Reply,
			Sampling: sampling, Seed: c.app.seed(), OnEvent: th.Push, FitContext: true, OpeningExtra: cont != nil})
		th.Close()
		c.finish(current, t, res, err, info.Mode.Reason, info.Leads.Len() > 0, asked)
	})
}

// chatTooLong says what to do when a message does not fit in the model's
// context. The earlier turns of a long chat are left out to make room
// (engine.Request.FitContext), so what does not fit is the last message
// itself, or a Max new tokens past the context.
func chatTooLong(ce *engine.ContextError) string {
	if ce.MaxNew > ce.Limit {
		return fmt.Sprintf("Max new tokens in Settings → Advanced (%d) is more than this model can read and write at once (%d tokens): "+
			"lower it in Settings, or clear it to use the model's default.", ce.MaxNew, ce.Limit)
	}
	return fmt.Sprintf("This message is too long for the model to read at once (%d tokens; with room for the answer "+
		"it needs %d of the %d it reads): send a shorter one.", ce.Prompt, ce.Need, ce.Limit)
}

// showPartial shows the committed part of the answer as the last message.
func (c *Chat) showPartial(t *chats.Thread, text string) {
	objs := c.messages.Objects
	n := len(t.Messages)
	view := c.messageView(chats.Message{Role: "model", Content: text}, c.app.activeModelName(), c.live, nil)
	if len(objs) > n {
		objs[n] = view
	} else {
		objs = append(objs, view)
	}
	c.messages.Objects = objs
	c.messages.Refresh()
}

// finish shows the answer, or the error; why is the mode's reason, which ends
// the status line (after DoneStatus's note of the entry's held text, or, where
// the model's folder holds entries, of the model's own writing: the reason may
// run past the window's edge). asked says what the row under the answer
// offers (showAfter).
func (c *Chat) finish(current func() bool, t *chats.Thread, res *engine.Result, err error, why string, entries bool, asked askedAbout) {
	onUI(func() {
		if !current() {
			return
		}
		c.answering = false
		c.live.Hide()
		if err != nil {
			c.status.SetText("Error")
			var ce *engine.ContextError
			if errors.As(err, &ce) { // (the earlier turns are left out where they alone do not fit: FitContext)
				c.showError(chatTooLong(ce))
			} else {
				c.showError(plainError("answer", err))
			}
			restored, cut := c.putBack(t) // a regenerated or continued answer that failed: the answer stays as it was
			if restored {
				c.save()
			}
			c.renderMessages()
			if cut { // and Continue is offered again
				c.showAfter(&engine.Result{StopReason: engine.StopMaxTokens}, askedAbout{})
			}
			c.updateButtons()
			return
		}
		c.continued = nil // (the answer written holds it: it was the opening)
		ans := chat.Parse(res.Text)
		text := strings.TrimSpace(ans.Text)
		if res.StopReason == engine.StopCancelled {
			text = strings.TrimSpace(text + "\n\n*(stopped)*")
		}
		t.Messages = append(t.Messages, chats.Message{Role: "model", Content: text, Thought: ans.Thought, Time: time.Now().UTC()})
		t.Model = c.app.activeModelName()
		t.ReadFrom = res.Dropped
		c.save()
		c.renderMessages()
		st := develop.DoneStatus(res, entries)
		if res.Dropped > 0 {
			st += " · " + plural.Count(res.Dropped, "earlier message", "earlier messages") + " left out"
		}
		if why != "" && !develop.HeldWhole(res) { // an entry held whole was written in no mode
			st += " · " + why
		}
		c.status.SetText(st)
		if res.StopReason != engine.StopCancelled {
			c.showAfter(res, asked)
		}
		c.updateButtons()
	})
}

// askedAbout is what the row under an answer offers: the entries a question
// about a topic with none may have meant (similar), or, for a question about
// an entry the model's folder holds (entry), the answer the other way — the
// model's own where it was the entry, the entry where it was the model's
// (own).
type askedAbout struct {
	similar    []string
	entry, own bool
}

// The row under an answer: its words for an entry's answer and the model's
// own, and its button's; and for an answer cut off at its length limit.
const (
	lengthLimitNote = "The answer stopped at its length limit."
	chatEntryNote   = "This answer is the entry, as written."
	letModelAnswer  = "Let the model answer"
	chatOwnNote     = "The model wrote this answer alone, without the entry: often wrong."
)

// showAfter fills the row under the answer res as asked says: for an entry's
// answer "Let the model answer", for the model's own answer to a question
// about an entry "Show the entry" (each asks again the other way); for an
// answer the model wrote alone or the Library answer ("compilr?" asked alone
// gets it), the entries the question may have meant, each
// a link that asks about it ("What is compiler?"), on one line cut to the
// screen's width as the Encyclopedia's suggestions are; else nothing.
func (c *Chat) showAfter(res *engine.Result, asked askedAbout) {
	c.after.RemoveAll()
	switch {
	case asked.entry && (asked.own || res.LeadHeld):
		note, label := chatEntryNote, letModelAnswer
		if asked.own {
			note, label = chatOwnNote, develop.ShowEntry
		}
		c.after.Add(widget.NewLabel(note))
		c.after.Add(widget.NewButtonWithIcon(label, theme.DocumentCreateIcon(), func() {
			c.own = !asked.own
			c.regenerate(false) // the other answer is this button's to bring back
		}))
	case len(asked.similar) > 0 && !res.LeadHeld:
		linkRow(c.after, widget.NewLabel("No entry for this; entries with a similar title:"), asked.similar, c.scroll.Size().Width, func(t string) {
			c.input.SetText("What is " + t + "?")
			c.Send()
		})
	case res.StopReason == engine.StopMaxTokens: // cut off: go on from there, or say where the limit is set
		c.after.Add(widget.NewLabel(lengthLimitNote))
		if n := len(c.cur.Messages); n > 0 && c.cur.Messages[n-1].Thought == "" {
			c.after.Add(widget.NewButtonWithIcon("Continue", theme.MediaPlayIcon(), c.ContinueAnswer))
		}
		c.after.Add(widget.NewButtonWithIcon("Allow longer answers", theme.SettingsIcon(), c.app.Settings.ShowMaxNewTokens))
	default:
		c.after.Hide()
		return
	}
	c.after.Show()
}

// modeAuto is the mode picker's choice of the model's default mode here.
const modeAuto = "Automatic mode"

// pickedMode is the mode a chat keeps for the picker's label ("" automatic).
func pickedMode(label string) string {
	for _, m := range []engine.Mode{engine.Diffusion, engine.AR} {
		if label == modeLabel(m) {
			return string(m)
		}
	}
	return ""
}

// pickedLabel is the picker's label of a chat's kept mode.
func pickedLabel(mode string) string {
	if m := engine.Mode(mode); m == engine.Diffusion || m == engine.AR {
		return modeLabel(m)
	}
	return modeAuto
}

// serverModeLabel names the mode in the status line of a model that runs one
// way only, the server's (ModelInfo.OneMode), whichever mode was picked.
const serverModeLabel = "The server's own mode"

// modeLabel is a mode's name in a status line and the mode picker.
func modeLabel(m engine.Mode) string {
	if m == engine.AR {
		return "Printer (AR)"
	}
	return "Polaroid (diffusion)"
}

// fitOptions is sel, as wide as its widest option needs: Fyne sizes a Select by
// its placeholder ("(Select one)"), so a longer choice was cut off ("Automatic ...")
// wherever nothing stretched the picker.
func fitOptions(sel *widget.Select) fyne.CanvasObject {
	text := func(s string) float32 { return fyne.MeasureText(s, theme.TextSize(), fyne.TextStyle{}).Width }
	widest := float32(0)
	for _, o := range sel.Options {
		widest = max(widest, text(o))
	}
	width := sel.MinSize().Width - text(sel.PlaceHolder) + widest
	spacer := canvas.NewRectangle(color.Transparent)
	spacer.SetMinSize(fyne.NewSize(float32(math.Ceil(float64(width))), 0))
	return container.NewStack(spacer, sel)
}
