//go:build linux || freebsd || openbsd || netbsd || dragonfly

package ui

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/godbus/dbus/v5"
)

// desktopServices are the desktop services the window uses when they are
// there: notifications and a system tray.
type desktopServices struct {
	notifications, tray bool
}

// probeDesktop asks the session's D-Bus whether it has a notification
// service and a tray (a StatusNotifier watcher). Without a session bus it
// has neither, and Heed does not try: Fyne and its tray would only write
// errors to stderr. It never starts a bus.
func probeDesktop() desktopServices {
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if addr == "" {
		rt := os.Getenv("XDG_RUNTIME_DIR")
		if rt == "" {
			return desktopServices{}
		}
		sock := filepath.Join(rt, "bus")
		if _, err := os.Stat(sock); err != nil {
			return desktopServices{}
		}
		addr = "unix:path=" + sock
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return desktopServices{}
	}
	defer conn.Close()
	var names, activatable []string
	bus := conn.BusObject()
	if err := bus.Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
		return desktopServices{}
	}
	_ = bus.Call("org.freedesktop.DBus.ListActivatableNames", 0).Store(&activatable)
	has := func(n string) bool { return slices.Contains(names, n) || slices.Contains(activatable, n) }
	return desktopServices{
		notifications: has("org.freedesktop.Notifications"),
		tray:          slices.Contains(names, "org.kde.StatusNotifierWatcher"),
	}
}
