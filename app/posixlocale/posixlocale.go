// Package posixlocale maps the POSIX "C" locale to US English before Fyne reads it.
//
// Fyne parses the user's locale while its packages initialize and logs "Fyne
// error" lines to stderr when that locale is "C" or "POSIX" (common in containers,
// CI and minimal installs). That noise would break the CLI's one-line error rule.
// Go initializes packages in import-path order once their dependencies are ready;
// this one needs only "os", so it runs before Fyne's locale dependency
// (github.com/jeandeaual/go-locale) and rewrites such a locale variable to
// en_US.UTF-8. main imports it for that side effect.
package posixlocale

import (
	"os"
	"strings"
)

func init() { Fix() }

// Fix rewrites the variable that decides the messages locale (the first non-empty
// of LC_ALL, LC_MESSAGES, LANG, in POSIX order) to en_US.UTF-8 when it names the
// C/POSIX locale. It reports whether it changed anything.
func Fix() bool {
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		if !IsPOSIX(v) {
			return false
		}
		return os.Setenv(name, "en_US.UTF-8") == nil
	}
	return false
}

// IsPOSIX reports whether a locale value names the C/POSIX locale ("C",
// "C.UTF-8", "POSIX").
func IsPOSIX(v string) bool {
	base, _, _ := strings.Cut(v, ".")
	return base == "C" || base == "POSIX"
}
