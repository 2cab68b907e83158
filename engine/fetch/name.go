package fetch

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxNameBytes caps a sanitised file name. It leaves room under the usual
// 255-byte limit for a " (12345)" collision suffix and the ".part" suffix.
const maxNameBytes = 200

// fallbackName is the name of last resort (F2).
const fallbackName = "index.html"

// SafeName turns an untrusted name (a Content-Disposition filename, a URL
// segment) into exactly one safe path component for the download folder (F2).
//
// The rules, applied in order:
//
//   - invalid UTF-8 is replaced with "_";
//   - the name is split on both "/" and "\" (on every OS) and only the last
//     segment is kept, so "../../.bashrc" and `..\..\evil.exe` lose their paths;
//   - a drive prefix ("C:", "f:") is dropped and any remaining ":" (NTFS
//     streams such as "name:stream") becomes "_";
//   - control characters (C0, DEL, C1, NUL), bidirectional overrides and the
//     characters Windows forbids (<>"|?*) become "_";
//   - leading dots and spaces and trailing dots and spaces are removed, which
//     also disposes of "." and ".." and of hidden dot-files;
//   - Windows device names (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$,
//     CONOUT$), with or without an extension, get a "_" prefix;
//   - names longer than 200 bytes are shortened, keeping a short extension.
//
// SafeName never returns an empty string: when nothing usable is left it
// returns "index.html". Callers that need to know whether the input held a
// usable name should compare against that, or use the F2 chain in [Fetcher.Do].
func SafeName(s string) string {
	if n := sanitize(s); n != "" {
		return n
	}
	return fallbackName
}

// sanitize is SafeName without the fallback: it returns "" when nothing
// usable remains.
func sanitize(s string) string {
	s = clean(s)
	if len(s) > maxNameBytes {
		s = shorten(s, maxNameBytes)
	}
	return s
}

// maxComponentBytes is the longest name most file systems take: a
// sanitised name with a collision suffix and ".part" stays under it.
const maxComponentBytes = 255

// safeComponent reports whether c is a name sanitize could have made,
// with a collision suffix and a part suffix added (F2, F3).
func safeComponent(c string) bool {
	return c != "" && len(c) <= maxComponentBytes && clean(c) == c
}

// clean is sanitize without the length limit.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "_")
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	if len(s) >= 2 && s[1] == ':' && isASCIILetter(s[0]) {
		s = s[2:]
	}
	s = strings.Map(func(r rune) rune {
		switch {
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return '_'
		case r == ':', r == '<', r == '>', r == '"', r == '|', r == '?', r == '*':
			return '_'
		case unicode.Is(unicode.Cf, r):
			// Invisible: zero-width spaces and joiners, direction marks
			// that disguise an extension ("x\u200b.pdf\u200b.exe",
			// "invoice\u202efdp.exe"). Dropped.
			return -1
		case isSlashLike(r):
			return '_'
		case r != ' ' && unicode.IsSpace(r):
			// Tabs and exotic spaces are legal but confusing in a file name.
			return ' '
		}
		return r
	}, s)
	s = strings.TrimLeft(s, ". ")
	s = strings.TrimRight(s, ". ")
	if s == "" {
		return ""
	}
	if s[0] == '-' { // "-rf" would read as an option to a command given the name
		s = "_" + s[1:]
	}
	if isReservedDeviceName(s) {
		s = "_" + s
	}
	return s
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isReservedDeviceName reports whether Windows would treat the name as a
// device, which it does regardless of the extension ("NUL.txt", "com1.tar.gz").
func isReservedDeviceName(s string) bool {
	stem := s
	if i := strings.IndexByte(stem, '.'); i >= 0 {
		stem = stem[:i]
	}
	stem = strings.ToUpper(strings.TrimRight(stem, " "))
	switch stem {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(stem) == 4 && (strings.HasPrefix(stem, "COM") || strings.HasPrefix(stem, "LPT")) {
		return stem[3] >= '0' && stem[3] <= '9'
	}
	// COM¹, LPT² … are devices too.
	if r, size := utf8.DecodeLastRuneInString(stem); size > 1 && len(stem) == 3+size &&
		(strings.HasPrefix(stem, "COM") || strings.HasPrefix(stem, "LPT")) {
		return r == '¹' || r == '²' || r == '³'
	}
	return false
}

// shorten cuts s to at most max bytes on a rune boundary, keeping an
// extension of up to 16 bytes, a compound one (".tar.gz") whole.
func shorten(s string, max int) string {
	stem, ext := splitExt(s) // ".tar.gz" stays whole
	if len(ext) > 16 {
		stem, ext = s, ""
	}
	keep := max - len(ext)
	for keep > 0 && !utf8.RuneStart(stem[keep]) {
		keep--
	}
	stem = strings.TrimRight(stem[:keep], ". ")
	if stem == "" {
		return strings.TrimLeft(ext, ".")
	}
	return stem + ext
}

// responseName picks the file name for a download (F2): the
// Content-Disposition filename if it survives sanitising, else the last path
// segment of the URL the user gave, else "index.html". A redirect target is
// never consulted (RELIABILITY A7).
func responseName(h http.Header, userURL *url.URL) string {
	if n := dispositionName(h.Values("Content-Disposition")); n != "" {
		return n
	}
	if n := urlName(userURL); n != "" {
		return n
	}
	return fallbackName
}

// dispositionName returns the sanitised filename parameter, or "" when the
// header is absent, malformed or ambiguous: two Content-Disposition headers,
// or two filename= parameters (mime.ParseMediaType rejects duplicates),
// RELIABILITY A6. filename* (RFC 2231) is decoded by mime and takes precedence
// over filename.
func dispositionName(values []string) string {
	if len(values) != 1 {
		return ""
	}
	_, params, err := mime.ParseMediaType(values[0])
	if err != nil {
		return ""
	}
	return sanitize(params["filename"])
}

// urlName returns the sanitised, percent-decoded last path segment of u.
func urlName(u *url.URL) string {
	if u == nil {
		return ""
	}
	p := u.EscapedPath()
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if dec, err := url.PathUnescape(p); err == nil {
		p = dec
	}
	return sanitize(p)
}

// isSlashLike reports the characters that look like a slash or a backslash
// without being one ("a／b∕c"): a name showing them would read as a path.
func isSlashLike(r rune) bool {
	switch r {
	case '\uff0f', '\u2215', '\u2044', '\u29f8', '\u2571', '\u1735', // slashes
		'\uff3c', '\u2216', '\u29f5', '\u29f9', '\ufe68', '\u2572': // backslashes
		return true
	}
	return false
}
