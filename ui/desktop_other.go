//go:build !(linux || freebsd || openbsd || netbsd || dragonfly)

package ui

// desktopServices are the desktop services the window uses when they are
// there: notifications and a system tray.
type desktopServices struct {
	notifications, tray bool
}

// probeDesktop: Windows and macOS always have both.
func probeDesktop() desktopServices { return desktopServices{notifications: true, tray: true} }
