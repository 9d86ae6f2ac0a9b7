package ui

import (
	"image/color"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/darkroomlabs/darkroom/app/htmlsafe"
	"github.com/darkroomlabs/darkroom/app/ui/htmlview"
	"github.com/darkroomlabs/darkroom/assets"
)

// pageView is where a developing page is drawn: an htmlview.View, or the
// Desktop's screen.
type pageView interface {
	SetDoc(*htmlsafe.Doc)
	Doc() *htmlsafe.Doc
}

// desktopScreen draws the markup of a Desktop screen (the "UI constitution" in
// assets/prompts/desktop_system.txt) as an operating system's screen: a
// wallpaper; the menu bar (<nav>) as a task bar at the bottom with a clock and a
// button per window; links that stand alone outside windows (the app icons) as
// desktop icons; each <section> as a window with a title bar and minimize,
// maximize and close controls; text outside any section in a window titled by
// the <h1>. Every element is clickable and reports a Click: links with their
// own id, the window controls and task buttons with ids made from the window's.
type desktopScreen struct {
	onLink  func(htmlsafe.Inline) // a link on the screen (an icon, a menu entry, a link in a window)
	onClick func(assets.Click)    // a window control or task button
	app     func() string         // the active app, for the clicks' App

	doc  *htmlsafe.Doc
	root *fyne.Container
}

func newDesktopScreen(onLink func(htmlsafe.Inline), onClick func(assets.Click), app func() string) *desktopScreen {
	s := &desktopScreen{onLink: onLink, onClick: onClick, app: app, root: container.NewStack()}
	return s
}

// Doc is the screen shown.
func (s *desktopScreen) Doc() *htmlsafe.Doc { return s.doc }

// desktopWindow is one window of a screen.
type desktopWindow struct {
	id, title string
	body      []htmlsafe.Block
}

// SetDoc draws d. Call on the UI goroutine.
func (s *desktopScreen) SetDoc(d *htmlsafe.Doc) {
	s.doc = d
	menu, icons, windows := desktopParts(d)
	wallpaper := canvas.NewLinearGradient(color.NRGBA{R: 0x1d, G: 0x3b, B: 0x53, A: 0xff}, color.NRGBA{R: 0x0e, G: 0x6b, B: 0x6b, A: 0xff}, 45)

	var tiles []fyne.CanvasObject
	for _, l := range icons {
		tiles = append(tiles, s.iconTile(l))
	}
	iconCol := container.NewVBox(tiles...)

	var wins []fyne.CanvasObject
	for i, w := range windows {
		wins = append(wins, s.window(w, i == 0))
	}
	desk := container.NewVScroll(container.NewPadded(container.NewVBox(wins...)))
	s.root.Objects = []fyne.CanvasObject{wallpaper, container.NewBorder(nil, s.taskBar(menu, windows), container.NewPadded(iconCol), nil, desk)}
	s.root.Refresh()
}

// desktopParts sorts a screen's blocks into the menu bar's links, the desktop's
// icons (links that stand alone outside windows) and the windows.
func desktopParts(d *htmlsafe.Doc) (menu, icons []htmlsafe.Inline, windows []desktopWindow) {
	if d == nil {
		return nil, nil, nil
	}
	var loose []htmlsafe.Block
	for _, b := range d.Blocks {
		switch {
		case b.Kind == htmlsafe.Group && b.Tag == "nav":
			menu = append(menu, blockLinks(b)...)
		case b.Kind == htmlsafe.Group:
			w := desktopWindow{id: b.ID, title: b.Title, body: b.Children}
			if w.title == "" && len(w.body) > 0 && w.body[0].Kind == htmlsafe.Heading {
				w.title, w.body = htmlsafe.Text(w.body[0].Inlines), w.body[1:]
			}
			windows = append(windows, w)
		case b.Kind == htmlsafe.Heading && b.Level == 1:
			// the active window's title: the window of the loose text below
		case onlyLinks(b):
			icons = append(icons, blockLinks(b)...)
		default:
			loose = append(loose, b)
		}
	}
	if len(loose) > 0 {
		title := d.Title
		if title == "" {
			title = "Desktop"
		}
		windows = append([]desktopWindow{{id: "main", title: title, body: loose}}, windows...)
	}
	return menu, icons, windows
}

// blockLinks lists the clickable runs of a block and what it holds.
func blockLinks(b htmlsafe.Block) []htmlsafe.Inline {
	var out []htmlsafe.Inline
	for _, in := range b.Inlines {
		if (in.Href != "" || in.ID != "") && strings.TrimSpace(in.Text) != "" {
			out = append(out, in)
		}
	}
	for _, it := range b.Items {
		for _, c := range it {
			out = append(out, blockLinks(c)...)
		}
	}
	for _, c := range b.Children {
		out = append(out, blockLinks(c)...)
	}
	return out
}

// onlyLinks reports whether a paragraph or list holds links and nothing else
// but spaces and separators: a row of icons.
func onlyLinks(b htmlsafe.Block) bool {
	if b.Kind != htmlsafe.Paragraph && b.Kind != htmlsafe.List {
		return false
	}
	links := 0
	var walk func(b htmlsafe.Block) bool
	walk = func(b htmlsafe.Block) bool {
		for _, in := range b.Inlines {
			if in.Href != "" || in.ID != "" {
				links++
			} else if strings.Trim(in.Text, " \t\n,·|•-–—") != "" {
				return false
			}
		}
		for _, it := range b.Items {
			for _, c := range it {
				if !walk(c) {
					return false
				}
			}
		}
		return true
	}
	return walk(b) && links > 0
}

// window draws one window: a title bar with its controls over its content.
func (s *desktopScreen) window(w desktopWindow, active bool) fyne.CanvasObject {
	title := widget.NewLabelWithStyle(htmlsafe.ShowNoise(w.title), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.Truncation = fyne.TextTruncateEllipsis // a model's title can be a paragraph: never widen the window
	id := w.id
	if id == "" {
		id = slug(w.title)
	}
	control := func(icon fyne.Resource, what string) *widget.Button {
		b := widget.NewButtonWithIcon("", icon, func() {
			s.onClick(assets.Click{ElementID: what + "-" + id, Text: what + " " + w.title, App: s.app()})
		})
		b.Importance = widget.LowImportance
		return b
	}
	controls := container.NewHBox(control(theme.ContentRemoveIcon(), "minimize"),
		control(theme.ViewFullScreenIcon(), "maximize"), control(theme.WindowCloseIcon(), "close"))
	barColor := theme.Color(theme.ColorNameButton)
	if active {
		barColor = theme.Color(theme.ColorNamePrimary)
	}
	bar := container.NewStack(canvas.NewRectangle(barColor),
		container.NewBorder(nil, nil, widget.NewIcon(theme.FileApplicationIcon()), controls, title))
	body := htmlview.New(s.onLink)
	body.SetDoc(&htmlsafe.Doc{Title: w.title, Blocks: w.body})
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameBackground))
	bg.StrokeColor = theme.Color(theme.ColorNameShadow)
	bg.StrokeWidth = 1
	bg.CornerRadius = theme.InputRadiusSize()
	return container.NewPadded(container.NewStack(bg, container.NewBorder(bar, nil, nil, nil, container.NewPadded(body))))
}

// taskBar draws the menu bar's links, a button per window and a clock.
func (s *desktopScreen) taskBar(menu []htmlsafe.Inline, windows []desktopWindow) fyne.CanvasObject {
	var items []fyne.CanvasObject
	for i, l := range menu {
		b := widget.NewButton(htmlsafe.ShowNoise(l.Text), func() { s.onLink(l) })
		if i == 0 {
			b.SetIcon(theme.GridIcon()) // the first menu entry is the start menu
			b.Importance = widget.HighImportance
		}
		items = append(items, b)
	}
	if len(menu) > 0 && len(windows) > 0 {
		items = append(items, widget.NewSeparator())
	}
	for _, w := range windows {
		id := w.id
		if id == "" {
			id = slug(w.title)
		}
		name := []rune(htmlsafe.ShowNoise(w.title))
		if len(name) > 18 {
			name = append(name[:18], '…')
		}
		b := widget.NewButtonWithIcon(string(name), theme.FileApplicationIcon(), func() {
			s.onClick(assets.Click{ElementID: "task-" + id, Text: w.title, App: s.app()})
		})
		b.Importance = widget.LowImportance
		items = append(items, b)
	}
	clock := widget.NewLabel(time.Now().Format("15:04"))
	tasks := container.NewHScroll(container.NewHBox(items...)) // many windows scroll, never widen the window
	return container.NewStack(canvas.NewRectangle(color.NRGBA{A: 0xc0}), container.NewBorder(nil, nil, nil, clock, tasks))
}

// iconTile is a desktop icon: a picture over its name; tapping it clicks the link.
func (s *desktopScreen) iconTile(l htmlsafe.Inline) fyne.CanvasObject {
	icon := theme.FileApplicationIcon()
	switch {
	case strings.Contains(l.Href, "folder") || strings.Contains(l.Href, "files"):
		icon = theme.FolderIcon()
	case strings.Contains(l.Href, "term"):
		icon = theme.ComputerIcon()
	case strings.Contains(l.Href, "help"):
		icon = theme.HelpIcon()
	}
	name := widget.NewLabelWithStyle(htmlsafe.ShowNoise(l.Text), fyne.TextAlignCenter, fyne.TextStyle{})
	name.Truncation = fyne.TextTruncateEllipsis
	pic := widget.NewIcon(icon)
	t := &tapTile{onTap: func() { s.onLink(l) }, text: l.Text,
		content: container.NewVBox(container.New(layout.NewGridWrapLayout(scaled(48, 48)), pic), name)}
	t.ExtendBaseWidget(t)
	return container.New(layout.NewGridWrapLayout(scaled(88, 80)), t)
}

// tapTile is a tappable area showing content.
type tapTile struct {
	widget.BaseWidget
	content fyne.CanvasObject
	text    string
	onTap   func()
}

func (t *tapTile) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(t.content) }

// Tapped implements fyne.Tappable.
func (t *tapTile) Tapped(*fyne.PointEvent) { t.onTap() }

// Cursor implements desktop.Cursorable.
func (t *tapTile) Cursor() desktop.Cursor { return desktop.PointerCursor }

// slug is an element id made of a title: lower case letters, digits and dashes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if b.Len() >= 24 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	if out := strings.TrimRight(b.String(), "-"); out != "" {
		return out
	}
	return "window"
}
