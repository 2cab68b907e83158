#!/usr/bin/env bash
# screenshot.sh BIN OUTDIR: runs `heed demo` (six loopback demo hosts:
# healthy, throttling, flaky, slow, dropping, quota; and the demo site, which
# it crawls) on a private virtual display and saves, in OUTDIR:
#   heed-hosts.png        the hosts view at 1240 × 760: the throttling host
#                         selected (its chart and timeline), the flaky one
#                         backing off, one host paused and one host's breaker
#                         tripped
#   heed-hosts-small.png  the same at 900 × 600
#   heed-jobs.png         the jobs view with a running download selected,
#                         showing its time left
#   heed-edit.png         the throttling host's settings form, scrolled to its
#                         request settings (a secret header shows masked)
#   heed-paste.png        the Add URLs dialog after a paste with a duplicate,
#                         a line of prose, rejected lines and a URL already
#                         downloaded
#   heed-crawl-dialog.png the Crawl… dialog filled in: two seeds on the demo
#                         site, prefix scope, depth, max pages, an exclude
#                         pattern
#   heed-crawls.png       the Crawls tab during the crawl of the demo site,
#                         with pages done, skipped and still queued
#   heed-robots.png       the hosts view with the demo site selected: its
#                         robots.txt (Disallow: /private/, Crawl-delay: 2)
#                         and its wait for the crawl-delay
# Each shot is a fresh demo run with a throwaway database, download folder
# and preferences, so a person's own queue and window are never touched. The
# window drives itself through HEED_SCREENSHOT_OPEN (see ui.ScreenshotEnv)
# and prints HEED_SCREENSHOT_READY once it shows what was asked; the shot is
# taken then (at most SHOT_WAIT seconds after the start, default 90). With
# ONLY="heed-crawls heed-robots" only the shots named are taken.
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

shoot() { # shoot NAME WHAT WIDTHxHEIGHT
	local name=$1 what=$2 size=$3 run="$tmp/$1" waited=0
	if [[ -n ${ONLY:-} && " $ONLY " != *" $name "* ]]; then
		return
	fi
	mkdir -p "$run/config"
	: >"$run/heed.log"
	HEED_SCREENSHOT_OPEN="$what@$size" XDG_CONFIG_HOME="$run/config" DISPLAY=$display \
		"$bin" demo --db "$run/heed.db" --dir "$run/downloads" >"$run/heed.log" 2>&1 &
	app=$!
	until grep -q HEED_SCREENSHOT_READY "$run/heed.log"; do
		kill -0 "$app" 2>/dev/null || { echo "heed exited early:"; cat "$run/heed.log"; exit 1; }
		if (( waited >= ${SHOT_WAIT:-90} * 4 )); then
			echo "the window did not say it was ready for $name in ${SHOT_WAIT:-90} s:"; cat "$run/heed.log"; exit 1
		fi
		sleep 0.25
		waited=$(( waited + 1 ))
	done
	DISPLAY=$display import -window root -crop "${size}+0+0" +repage "$out/$name.png"
	kill "$app"
	wait "$app" 2>/dev/null || true
	app=
	if grep -E 'Error in Fyne call thread|fyne.Do|panic|goroutine [0-9]+ \[' "$run/heed.log"; then
		echo "threading errors in the $name run (above)"; exit 1
	fi
	echo "saved $out/$name.png"
}

shoot heed-hosts hosts 1240x760
shoot heed-hosts-small hosts 900x600
shoot heed-jobs jobs 1240x760
shoot heed-edit edit 1240x760
shoot heed-paste paste 1240x760
shoot heed-crawl-dialog crawl 1240x760
shoot heed-crawls crawls 1240x760
shoot heed-robots robots 1240x760
