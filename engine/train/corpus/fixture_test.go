package corpus

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fixtureDicts are two small dictionaries in the dictd layout of dict-foldoc and
// dict-jargon: header lines, indented bodies, cross references (one wrapped over
// two lines, one with a separate target), a category, a pronunciation, numbered
// senses, bullets, a verbatim block, and what must be dropped (e-mail, external
// link, citation, date, the 00-database metadata).
var fixtureDicts = map[string][]string{
	"foldoc": {
		"00-database-short\n     The Free On-line Dictionary of Computing (fixture)\n",
		"Unix\nUNIX\n\n   <operating system> /yoo'niks/ An interactive {time-sharing}\n" +
			"   {operating system} invented in 1969 by {Ken Thompson} at {Bell\n" +
			"   Labs}. It was *very* popular.  It is {standardised\n   (standard)} as {POSIX}.\n\n" +
			"   Its authors <dmr@bell-labs.com> were hackers.\n\n" +
			"   {The UNIX Reference Desk\n   (http://geek-girl.com/unix.html)}.\n\n" +
			"   [{Jargon File}]\n\n   (2001-05-14)\n",
		"operating system\nOS\n\n   <operating system> (OS) The low-level software which schedules\n   tasks.  See also {Unix}.\n\n   (1995-01-01)\n",
		"Ken Thompson\n\n   <person> The co-author of {Unix} & {C}.\n",
		"ABC\n\n   <language> An {imperative language} from CWI.\n\n   An example function:\n\n" +
			"      HOW TO RETURN words document:\n         PUT {} IN collection\n\n" +
			"   ABC has:\n\n   * five data types;\n\n   * {strong typing}.\n",
	},
	"jargon": {
		"Unix\n /yoo'niks/, n.\n\n    A jargon version that loses to FOLDOC's.\n",
		"hacker\n n.\n\n    [originally, someone who makes furniture with an axe]\n\n" +
			"    1. A person who enjoys exploring the details of {programmable systems}.\n\n" +
			"    2. One who programs enthusiastically. See {unix}.\n",
	},
}

// writeFixtureDicts writes NAME.index and NAME.dict.dz (a gzip stream, as a
// dictzip file reads) for each fixture dictionary; extra headwords give Unix
// and operating system more index keys, as dictd files do.
func writeFixtureDicts(t *testing.T, dir string) {
	t.Helper()
	for name, defs := range fixtureDicts {
		var data bytes.Buffer
		var index []string
		for _, d := range defs {
			off := int64(data.Len())
			data.WriteString(d + "\n")
			head := strings.ToLower(strings.SplitN(d, "\n", 2)[0])
			heads := []string{head}
			switch head {
			case "unix":
				if name == "foldoc" {
					heads = append(heads, "unices")
				}
			case "operating system":
				heads = append(heads, "os")
			}
			for _, h := range heads {
				index = append(index, h+"\t"+encodeB64(off)+"\t"+encodeB64(int64(len(d)+1)))
			}
		}
		sort.Strings(index)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(data.Bytes())
		zw.Close()
		if err := os.WriteFile(filepath.Join(dir, name+".dict.dz"), gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".index"), []byte(strings.Join(index, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixturePackages are Debian package records as `apt-cache show` prints them.
const fixturePackages = `Package: gimp
Version: 2.10.34-1+deb12u10
Installed-Size: 19882
Maintainer: Someone <someone@example.org>
Description: GNU Image Manipulation Program
Description-md5: 0c13253910a0a1bd77c64d38c07351a0
Tag: implemented-in::c, interface::graphical,
 interface::x11, use::editing, works-with-format::png,
 works-with::image
Section: graphics
Priority: optional

Package: vim
Version: 2:9.0.1378-2+deb12u2
Installed-Size: 3650
Description: Vi IMproved - enhanced vi editor
Tag: devel::editor, implemented-in::c, interface::text-mode, works-with::text
Section: editors
Priority: optional

Package: g++
Version: 4:12.2.0-3
Installed-Size: 14
Description: GNU C++ compiler
Section: devel
Priority: optional

Package: vim
Version: 1:0.0-old
Description: a second record of vim, ignored

Package: nodescription
Version: 1
`
