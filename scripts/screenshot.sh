#!/usr/bin/env bash
# screenshot.sh BIN OUTDIR: runs Heed's window on a private virtual display,
# waits for it to draw, and saves OUTDIR/heed.png. Uses a throwaway database
# and download folder so a person's own queue is never touched.
set -euo pipefail
bin=$1 out=$2
tmp=$(mktemp -d)
display=:$(( 90 + RANDOM % 9 ))
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
trap 'kill "$app" "$xvfb" 2>/dev/null || true; rm -rf "$tmp"' EXIT
sleep 1
DISPLAY=$display "$bin" --db "$tmp/heed.db" --dir "$tmp/downloads" >"$tmp/heed.log" 2>&1 &
app=$!
sleep "${SHOT_WAIT:-4}"
kill -0 "$app" || { echo "heed exited early:"; cat "$tmp/heed.log"; exit 1; }
DISPLAY=$display import -window root "$out/heed.png"
echo "saved $out/heed.png"
