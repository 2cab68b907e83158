#!/usr/bin/env bash
# fleet-screenshot.sh BIN OUTDIR: the window on a PostgreSQL queue shared by
# a fleet, saved as OUTDIR/heed-workers.png. It starts a throwaway
# PostgreSQL server (initdb into a temporary folder, run as the postgres
# user when root), `heed demo --headless` on it (the demo hosts, queued; it
# works on them too), two `heed worker` processes and the window, on a
# private virtual display, and shoots the window's Workers tab.
set -euo pipefail
bin=$(realpath "$1") out=$(realpath "$2")
tmp=$(mktemp -d)
chmod 755 "$tmp"
pgbin=$(dirname "$(ls /usr/lib/postgresql/*/bin/pg_ctl | tail -1)")
as=()
owner=$(id -un)
if [ "$(id -u)" = 0 ]; then
	as=(runuser -u postgres --)
	owner=postgres
fi
mkdir -p "$tmp/pg"
[ "$(id -u)" = 0 ] && chown postgres "$tmp/pg"
"${as[@]}" "$pgbin/initdb" -D "$tmp/pg/data" -U "$owner" -A trust --no-sync --no-instructions >"$tmp/initdb.log"
"${as[@]}" "$pgbin/pg_ctl" -D "$tmp/pg/data" -o "-c listen_addresses='' -k $tmp/pg -c fsync=off" -l "$tmp/pg/log" -w start >/dev/null
dsn="postgres://$owner@/postgres?host=$tmp/pg"
display=:$(( 90 + RANDOM % 9 ))
export LANG=en_US.UTF-8
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
pids=($!)
trap 'kill "${pids[@]}" 2>/dev/null || true; sleep 1; "${as[@]}" "$pgbin/pg_ctl" -D "$tmp/pg/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$bin" demo --headless --db "$dsn" --dir "$tmp/demo" --files 200 >"$tmp/demo.log" 2>&1 &
pids+=($!)
sleep 5
for name in left right; do
	"$bin" worker --db "$dsn" --dir "$tmp/$name" --name "$name" -q >"$tmp/$name.log" 2>&1 &
	pids+=($!)
done
mkdir -p "$tmp/config"
HEED_SCREENSHOT_OPEN="workers@1240x760" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display \
	"$bin" --db "$dsn" --dir "$tmp/window" >"$tmp/window.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 240); do
	grep -q HEED_SCREENSHOT_READY "$tmp/window.log" && break
	sleep 0.25
done
grep -q HEED_SCREENSHOT_READY "$tmp/window.log" || { cat "$tmp/window.log"; exit 1; }
DISPLAY=$display import -window root -crop 1240x760+0+0 +repage "$out/heed-workers.png"
echo "saved $out/heed-workers.png"
