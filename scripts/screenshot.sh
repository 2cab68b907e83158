#!/usr/bin/env bash
# screenshot.sh BIN OUTDIR: runs `heed demo` (five loopback demo hosts:
# healthy, throttling, flaky, slow, dropping) on a private virtual display
# and saves, in OUTDIR:
#   heed-hosts.png  the main window, the most throttled host selected
#   heed-edit.png   that host's settings form
#   heed-paste.png  the Add URLs dialog after a paste with a duplicate and
#                   rejected lines
# Each shot is a fresh demo run with a throwaway database and download
# folder, so a person's own queue is never touched. The window drives
# itself through HEED_SCREENSHOT_OPEN (see ui.ScreenshotEnv): ten seconds
# after it opens it selects the host or opens the dialog; the shot is taken
# at SHOT_WAIT seconds (default 16; 40 for the hosts shot, so that the chart
# has filled and the flaky host has backed off far).
set -euo pipefail
bin=$1 out=$2
tmp=$(mktemp -d)
display=:$(( 90 + RANDOM % 9 ))
export LANG=en_US.UTF-8
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
app=
trap 'kill $app "$xvfb" 2>/dev/null || true; rm -rf "$tmp"' EXIT
sleep 1

shoot() { # shoot NAME WHAT [SECONDS]
	local name=$1 what=$2 wait=${3:-${SHOT_WAIT:-16}} run="$tmp/$1"
	mkdir -p "$run"
	HEED_SCREENSHOT_OPEN=$what DISPLAY=$display "$bin" demo --db "$run/heed.db" --dir "$run/downloads" \
		>"$run/heed.log" 2>&1 &
	app=$!
	sleep "$wait"
	kill -0 "$app" || { echo "heed exited early:"; cat "$run/heed.log"; exit 1; }
	DISPLAY=$display import -window root -crop 1240x760+0+0 +repage "$out/$name.png"
	kill "$app"
	wait "$app" 2>/dev/null || true
	app=
	if grep -E 'Error in Fyne call thread|fyne.Do|panic|goroutine [0-9]+ \[' "$run/heed.log"; then
		echo "threading errors in the $name run (above)"; exit 1
	fi
	echo "saved $out/$name.png"
}

shoot heed-hosts select 40
shoot heed-edit edit
shoot heed-paste paste
