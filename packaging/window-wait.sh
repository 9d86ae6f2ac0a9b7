#!/bin/sh
# Runs under xvfb-run: starts PROGRAM, waits up to 60 s for a window titled TITLE,
# lets it draw, records its line of xwininfo in OUT/window.txt and grabs the screen
# into OUT/screen.xwd, then stops the program. PROGRAM's output goes to OUT/app.log;
# what went wrong, to OUT/window.err (and the exit status is 1).
#
#   xvfb-run … sh packaging/window-wait.sh PROGRAM OUT TITLE
"$1" >"$2/app.log" 2>&1 &
echo $! >"$2/app.pid"
i=0
while [ $i -lt 120 ]; do
	if ! kill -0 "$(cat "$2/app.pid")" 2>/dev/null; then
		echo "the program exited before a window opened" >"$2/window.err"
		exit 1
	fi
	if xwininfo -root -tree | grep -q "\"$3\""; then
		sleep 3 # let it draw
		xwininfo -root -tree | grep "\"$3\"" | head -1 >"$2/window.txt"
		xwd -root -silent -out "$2/screen.xwd"
		kill "$(cat "$2/app.pid")"
		# Wait for it to quit while the X server is still up: xvfb-run stops the
		# server as soon as this script ends, and a program still closing its
		# window then logs a fatal X I/O error that is the check's, not its own.
		wait "$(cat "$2/app.pid")" 2>/dev/null
		exit 0
	fi
	i=$((i + 1))
	sleep 0.5
done
echo "no \"$3\" window after 60 s" >"$2/window.err"
kill "$(cat "$2/app.pid")"
exit 1
