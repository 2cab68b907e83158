// Package assets holds the files Heed embeds in its binary: the app icon, as
// SVG (the source) and PNG (what window managers and packagers take).
//
// It imports nothing from Fyne so that the headless command line can use it
// too; the window wraps these bytes in a fyne.StaticResource.
package assets

import _ "embed"

// IconSVG is the Heed icon: a gauge over three paced requests.
//
//go:embed icon.svg
var IconSVG []byte

// IconPNG is IconSVG rendered at 512×512.
//
//go:embed icon.png
var IconPNG []byte
