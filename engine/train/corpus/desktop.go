package corpus

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/darkroomlabs/darkroom/assets"
)

// DesktopPackages is the fixed list of Debian packages that are the Desktop
// demo's apps. Packages the local apt metadata does not know are left out (and
// counted in the stats).
var DesktopPackages = strings.Fields(`
0ad abiword aisleriot anjuta ardour audacious audacity autokey-gtk baobab blender bless bluefish brasero
bsdgames calibre calligra cheese chromium claws-mail clementine cmus cowsay darktable deja-dup devhelp dia
digikam dosbox eboard emacs emacs-gtk eog epiphany-browser evince evolution falkon fbreader feh ffmpeg
filezilla firefox-esr fontforge fortune-mod freecad freeciv-client-gtk3 frozen-bubble galculator gbrainy
gcompris-qt geany gedit geeqie gimp git-cola gitg gkrellm gnome-boxes gnome-calculator gnome-chess
gnome-disk-utility gnome-maps gnome-mines gnome-sudoku gnome-terminal gnome-weather gnucash gnumeric gnuplot
gparted gpick gramps granatier gthumb guake gwenview handbrake hedgewars hexchat homebank htop hugin inkscape
irssi jami k3b kanagram kate kbruch kcalc kdenlive keepassxc kfind kgeography kicad kile kmahjongg kmines
kolourpaint konsole krita kstars ktorrent ktouch kwrite labplot liferea links2 lmms lyx mame marble maxima
meld minetest mirage mousepad mpv mupdf musescore3 mutt nano nautilus neofetch neovim nethack-console
neverball newsboat octave okular openscad openshot-qt pavucontrol pcmanfm pidgin pingus pitivi planner
qbittorrent qgis qpdfview quodlibet r-base ranger rawtherapee remmina rhythmbox ristretto rosegarden scribus
scummvm seahorse shotwell simple-scan sl smplayer solfege sound-juicer stellarium stockfish supertux
supertuxkart sweethome3d synaptic thunar thunderbird tilix tmux totem transmission-gtk tuxguitar tuxmath
tuxpaint umbrello vim vlc weechat wesnoth wireshark xaos xboard xchm xournal xpdf xscreensaver xterm zathura
zim`)

// favourites are the apps on the home screen, in order (those present).
var favourites = []string{"firefox-esr", "thunderbird", "gimp", "vlc", "gedit", "gnome-terminal", "nautilus", "gnome-calculator"}

// App is one Debian package as a Desktop app.
type App struct {
	Name     string
	Version  string
	Section  string
	Priority string
	SizeKB   int
	Summary  string // the short description
	Tags     []string
}

// ParsePackages reads Debian control-format package records (the output of
// `apt-cache show`, /var/lib/dpkg/status, a Packages file). Records without a
// Package or Description are skipped; for a package listed twice the first
// record wins.
func ParsePackages(r io.Reader) ([]App, error) {
	var apps []App
	seen := map[string]bool{}
	fields := map[string]string{}
	var last string
	flush := func() {
		a := App{
			Name: fields["package"], Version: fields["version"], Section: fields["section"], Priority: fields["priority"],
			Summary: strings.TrimSpace(firstLine(fields["description"])),
		}
		if a.Summary == "" {
			a.Summary = strings.TrimSpace(firstLine(fields["description-en"]))
		}
		a.SizeKB, _ = strconv.Atoi(strings.TrimSpace(fields["installed-size"]))
		for _, t := range strings.Split(fields["tag"], ",") {
			if t = strings.TrimSpace(t); t != "" {
				a.Tags = append(a.Tags, t)
			}
		}
		if i := strings.LastIndexByte(a.Section, '/'); i >= 0 { // "contrib/games"
			a.Section = a.Section[i+1:]
		}
		if a.Name != "" && a.Summary != "" && !seen[a.Name] {
			seen[a.Name] = true
			apps = append(apps, a)
		}
		clear(fields)
		last = ""
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 256*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if len(fields) > 0 {
				flush()
			}
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += "\n" + line
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(k)
			fields[last] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read package records: %w", err)
	}
	if len(fields) > 0 {
		flush()
	}
	return apps, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// LoadPackages returns the records of DesktopPackages: from `apt-cache show`
// when apt knows them, else from /var/lib/dpkg/status (installed packages only).
// The result follows DesktopPackages' order, so it is deterministic for given
// apt metadata.
func LoadPackages(ctx context.Context) ([]App, error) {
	var all []App
	out, aptErr := exec.CommandContext(ctx, "apt-cache", append([]string{"show", "--no-all-versions"}, DesktopPackages...)...).Output()
	if len(out) > 0 {
		apps, err := ParsePackages(strings.NewReader(string(out)))
		if err != nil {
			return nil, err
		}
		all = apps
	}
	if len(all) == 0 {
		f, err := os.Open("/var/lib/dpkg/status")
		if err != nil {
			return nil, fmt.Errorf("no package data: apt-cache show: %v; dpkg status: %w", aptErr, err)
		}
		defer f.Close()
		if all, err = ParsePackages(f); err != nil {
			return nil, err
		}
	}
	return selectApps(all, DesktopPackages), nil
}

// selectApps keeps the apps named in names, in that order.
func selectApps(all []App, names []string) []App {
	by := map[string]App{}
	for _, a := range all {
		by[a.Name] = a
	}
	var out []App
	for _, n := range names {
		if a, ok := by[n]; ok {
			out = append(out, a)
		}
	}
	return out
}

// category is one entry of the Applications menu.
type category struct {
	ID, Name string
}

var categories = []category{
	{"games", "Games"}, {"graphics", "Graphics"}, {"sound", "Sound and Video"}, {"internet", "Internet"},
	{"office", "Office"}, {"science", "Science and Math"}, {"development", "Development"}, {"system", "System"},
}

// Category returns the Applications-menu category of an app: from its Debian
// section, or for desktop-environment sections (gnome, kde, x11, …) from its
// debtags.
func (a App) Category() string {
	switch a.Section {
	case "games":
		return "games"
	case "graphics":
		return "graphics"
	case "sound", "video":
		return "sound"
	case "net", "web", "mail", "comm", "httpd":
		return "internet"
	case "editors", "text", "tex", "doc":
		return "office"
	case "math", "science", "electronics", "gnu-r", "education":
		return "science"
	case "devel", "vcs", "java", "python", "interpreters", "rust", "golang":
		return "development"
	}
	has := func(prefix string) bool {
		for _, t := range a.Tags {
			if strings.HasPrefix(t, prefix) {
				return true
			}
		}
		return false
	}
	switch {
	case has("game::"):
		return "games"
	case has("works-with::image"):
		return "graphics"
	case has("works-with::audio"), has("works-with::video"), has("sound::"):
		return "sound"
	case has("web::"), has("network::"), has("protocol::"), has("mail::"):
		return "internet"
	case has("works-with::text"), has("office::"):
		return "office"
	case has("field::"):
		return "science"
	case has("devel::"):
		return "development"
	}
	return "system"
}

// elementID turns a package name into the part of a Desktop element ID:
// letters, digits and dashes ("g++" → "gplusplus", "foo.bar" → "foo-bar").
func elementID(name string) string {
	r := strings.NewReplacer("+", "plus", ".", "-", "_", "-")
	return strings.ToLower(r.Replace(name))
}

// tagValues returns the values of the debtags with the given facet, in order,
// "works-with-format::png" → "png".
func (a App) tagValues(facet string) []string {
	var out []string
	for _, t := range a.Tags {
		if v, ok := strings.CutPrefix(t, facet+"::"); ok && v != "TODO" {
			out = append(out, strings.ReplaceAll(v, ":", " "))
		}
	}
	return out
}

var langNames = map[string]string{"c": "C", "c++": "C++", "python": "Python", "perl": "Perl", "java": "Java",
	"lisp": "Lisp", "ocaml": "OCaml", "haskell": "Haskell", "ruby": "Ruby", "tcl": "Tcl", "shell": "shell",
	"vala": "Vala", "rust": "Rust", "go": "Go", "lua": "Lua", "javascript": "JavaScript", "fortran": "Fortran",
	"ecmascript": "JavaScript", "scheme": "Scheme", "pascal": "Pascal", "c-sharp": "C#"}

// screen assembles one Desktop screen.
func screen(title string, sections ...string) string {
	var b strings.Builder
	b.WriteString(assets.DesktopOpening())
	b.WriteString("<h1>" + assets.EscapeText(title) + "</h1>")
	for _, s := range sections {
		b.WriteString("\n<section>" + s + "</section>")
	}
	return b.String()
}

func uiLink(id, text string) string {
	return `<a href="` + assets.UIPrefix + id + `">` + assets.EscapeText(text) + `</a>`
}

func formatSize(kb int) string {
	switch {
	case kb <= 0:
		return ""
	case kb < 1024:
		return fmt.Sprintf("%d kB", kb)
	default:
		return fmt.Sprintf("%.1f MB", float64(kb)/1024)
	}
}

// Desktop builds the screens of the Desktop demo from the apps.
//
// Every clickable element has a global ID that alone decides the next screen
// (ScreenFor), so the demo is a graph: the training clicks are its edges, found
// by walking it from the home screen. A click's App is the <h1> of the screen it
// was made on, which is what the app sends ("desktop" before the first screen).
type Desktop struct {
	Apps    []App
	PerPage int // apps per category page (default 8)
	// NavEvery keeps the menu-bar clicks (Applications, Help), which lead to the
	// same screen from everywhere, from one screen in NavEvery (chosen by hash)
	// besides the shared screens; default 8.
	NavEvery int

	byID map[string]App
}

// Click is one training example of the Desktop demo: a click and the screen it leads to.
type Click struct {
	Click  assets.Click
	Screen string
	// App is the package whose screens the example involves (the screen clicked
	// on or the one it leads to), "" when both are shared screens (home, menus).
	App string
}

func (d *Desktop) perPage() int {
	if d.PerPage <= 0 {
		return 8
	}
	return d.PerPage
}

func (d *Desktop) app(id string) (App, bool) {
	if d.byID == nil {
		d.byID = map[string]App{}
		for _, a := range d.Apps {
			d.byID[elementID(a.Name)] = a
		}
	}
	a, ok := d.byID[id]
	return a, ok
}

// HomeScreen is the first screen: the answer to the power-on click (and to an
// empty click).
func (d *Desktop) HomeScreen() string {
	var items []string
	for _, f := range favourites {
		if a, ok := d.app(elementID(f)); ok && a.Name == f {
			items = append(items, "<li>"+uiLink("app-"+elementID(a.Name), a.Name)+"</li>")
		}
	}
	return screen("Desktop", "<h2>Favourites</h2><ul>"+strings.Join(items, "")+"</ul>")
}

func (d *Desktop) appsInCategory(id string) []App {
	var out []App
	for _, a := range d.Apps {
		if a.Category() == id {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ScreenFor returns the screen a click on element id leads to, and the package
// the screen is about ("" for shared screens). ok is false for an unknown id.
func (d *Desktop) ScreenFor(id string) (html, app string, ok bool) {
	switch id {
	case "", "-", "power", "menu-close":
		return d.HomeScreen(), "", true
	case "menu-help":
		return screen("Help", "<h2>Darkroom Desktop</h2><p>This desktop is drawn by a language model, one screen per click. "+
			"Open "+uiLink("menu-apps", "Applications")+" to find an app; every app is a real Debian package.</p>"+
			"<p>"+uiLink("menu-close", "Close")+"</p>"), "", true
	case "menu-apps":
		var menu []string
		for _, c := range categories {
			if len(d.appsInCategory(c.ID)) > 0 {
				menu = append(menu, "<li>"+uiLink("menu-"+c.ID, c.Name)+"</li>")
			}
		}
		return screen("Applications", "<h2>Applications</h2><ul>"+strings.Join(menu, "")+"</ul>"), "", true
	}
	if rest, found := strings.CutPrefix(id, "menu-"); found {
		for _, c := range categories {
			page := 1
			if rest != c.ID {
				n, err := strconv.Atoi(strings.TrimPrefix(rest, c.ID+"-"))
				if err != nil || !strings.HasPrefix(rest, c.ID+"-") || n < 2 {
					continue
				}
				page = n
			}
			if s, ok := d.categoryScreen(c, page); ok {
				return s, "", true
			}
		}
		return "", "", false
	}
	if name, found := strings.CutPrefix(id, "app-"); found {
		if a, ok := d.app(name); ok {
			return d.AppScreen(a), a.Name, true
		}
	}
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		if a, ok := d.app(id[:i]); ok {
			switch id[i+1:] {
			case "help":
				return d.helpScreen(a), a.Name, true
			case "about":
				return d.aboutScreen(a), a.Name, true
			case "back":
				return d.AppScreen(a), a.Name, true
			case "close":
				return d.HomeScreen(), a.Name, true
			}
		}
	}
	return "", "", false
}

func (d *Desktop) categoryScreen(c category, page int) (string, bool) {
	apps, per := d.appsInCategory(c.ID), d.perPage()
	if (page-1)*per >= len(apps) {
		return "", false
	}
	var items []string
	for _, a := range apps[(page-1)*per : min(len(apps), page*per)] {
		items = append(items, "<li>"+uiLink("app-"+elementID(a.Name), a.Name)+": "+assets.EscapeText(a.Summary)+"</li>")
	}
	body := "<h2>" + assets.EscapeText(c.Name) + "</h2><ul>" + strings.Join(items, "") + "</ul>"
	if page*per < len(apps) {
		body += "<p>" + uiLink(fmt.Sprintf("menu-%s-%d", c.ID, page+1), "More") + "</p>"
	}
	return screen(c.Name, body), true
}

var (
	reUILink = regexp.MustCompile(`<a href="/ui/([^"]+)">([^<]*)</a>`)
	reH1     = regexp.MustCompile(`<h1>([^<]*)</h1>`)
)

// StartCopies is how many times Clicks gives the start clicks: every Desktop
// session begins with one, and a single copy among 1,624 clicks went
// unlearned — Darkroom Mini drew the home screen after any window's Close, and
// a window titled "packet" after Power on (session 26).
const StartCopies = 16

// Clicks returns the demo's training clicks in a fixed order: the start clicks
// (power on, and an empty click), StartCopies times, and every link of every
// screen reachable from the home screen, with the screen it leads to.
func (d *Desktop) Clicks() []Click {
	navEvery := uint64(d.NavEvery)
	if navEvery == 0 {
		navEvery = 8
	}
	home := d.HomeScreen()
	var out []Click
	for range StartCopies {
		out = append(out, Click{Click: assets.Click{ElementID: "power", Text: "Power on", App: "desktop"}, Screen: home},
			Click{Click: assets.Click{}, Screen: home})
	}
	type visit struct{ html, app string }
	queue := []visit{{home, ""}}
	seen := map[string]bool{home: true}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		h1 := ""
		if m := reH1.FindStringSubmatch(cur.html); m != nil {
			h1 = html.UnescapeString(m[1])
		}
		for _, m := range reUILink.FindAllStringSubmatch(cur.html, -1) {
			id, text := m[1], html.UnescapeString(m[2])
			next, nextApp, ok := d.ScreenFor(id)
			if !ok {
				continue // cannot happen for screens built here; TestDesktop checks
			}
			nav := id == "menu-apps" || id == "menu-help"
			if nav && cur.app != "" && titleHash("nav:"+h1)%navEvery != 0 {
				continue
			}
			app := cur.app
			if app == "" {
				app = nextApp
			}
			out = append(out, Click{Click: assets.Click{ElementID: id, Text: text, App: h1}, Screen: next, App: app})
			if !seen[next] {
				seen[next] = true
				queue = append(queue, visit{next, nextApp})
			}
		}
	}
	return out
}

// AppScreen is an app's main window.
func (d *Desktop) AppScreen(a App) string {
	id := elementID(a.Name)
	var facts []string
	if v := a.tagValues("interface"); len(v) > 0 {
		facts = append(facts, "<li>Interface: "+assets.EscapeText(strings.Join(v, ", "))+"</li>")
	}
	if v := a.tagValues("implemented-in"); len(v) > 0 {
		for i, l := range v {
			if n, ok := langNames[l]; ok {
				v[i] = n
			}
		}
		facts = append(facts, "<li>Written in: "+assets.EscapeText(strings.Join(v, ", "))+"</li>")
	}
	if s := formatSize(a.SizeKB); s != "" {
		facts = append(facts, "<li>Installed size: "+s+"</li>")
	}
	body := "<h2>" + assets.EscapeText(a.Summary) + "</h2><p>" + assets.EscapeText(a.Name) + " " + assets.EscapeText(shortVersion(a.Version)) +
		", from the Debian " + assets.EscapeText(a.Section) + " section.</p>"
	if len(facts) > 0 {
		body += "<ul>" + strings.Join(facts, "") + "</ul>"
	}
	body += "<p>" + uiLink(id+"-help", "Help") + " " + uiLink(id+"-about", "About") + " " + uiLink(id+"-close", "Close") + "</p>"
	return screen(a.Name, body)
}

func (d *Desktop) helpScreen(a App) string {
	id := elementID(a.Name)
	var facts []string
	for _, f := range [][2]string{{"use", "Use it for"}, {"works-with", "Works with"}, {"works-with-format", "File formats"}, {"field", "Field"}, {"game", "Kind of game"}} {
		if v := a.tagValues(f[0]); len(v) > 0 {
			if len(v) > 6 {
				v = v[:6]
			}
			facts = append(facts, "<li>"+f[1]+": "+assets.EscapeText(strings.Join(v, ", "))+"</li>")
		}
	}
	body := "<h2>" + assets.EscapeText(a.Name) + " Help</h2><p>" + assets.EscapeText(a.Summary) + ".</p>"
	if len(facts) > 0 {
		body += "<ul>" + strings.Join(facts, "") + "</ul>"
	}
	body += "<p>" + uiLink(id+"-back", "Back") + " " + uiLink(id+"-close", "Close") + "</p>"
	return screen(a.Name+" Help", body)
}

func (d *Desktop) aboutScreen(a App) string {
	id := elementID(a.Name)
	body := "<h2>About " + assets.EscapeText(a.Name) + "</h2><p>" + assets.EscapeText(a.Name) + " version " + assets.EscapeText(a.Version) + "</p><p>" +
		assets.EscapeText(a.Summary) + ".</p><p>A Debian package in the " + assets.EscapeText(a.Section) + " section"
	if a.Priority != "" {
		body += ", priority " + assets.EscapeText(a.Priority)
	}
	body += ".</p><p>" + uiLink(id+"-back", "Back") + " " + uiLink(id+"-close", "Close") + "</p>"
	return screen("About "+a.Name, body)
}

// shortVersion drops the epoch and the Debian revision: "2:9.0.1378-2+deb12u2" → "9.0.1378".
func shortVersion(v string) string {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	return v
}

var errNoApps = errors.New("none of the Desktop packages is known to apt or dpkg")
