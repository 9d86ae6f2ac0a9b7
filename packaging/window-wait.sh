#!/bin/sh
# Runs under xvfb-run: starts PROGRAM, waits up to 60 s for a window titled TITLE,
# lets it draw, grabs the screen into OUT/screen.xwd, stops the program and checks
# what it saw: a window of at least 400×300 (its size written to OUT/geometry), a
# screenshot, and no panic or fatal error in PROGRAM's output (OUT/app.log). On a
# failure the exit status is 1 and OUT/window.err says what is wrong.
#
#   xvfb-run … sh packaging/window-wait.sh PROGRAM OUT TITLE
"$1" >"$2/app.log" 2>&1 &
echo $! >"$2/app.pid"
i=0
while [ $i -lt 120 ]; do
	if ! kill -0 "$(cat "$2/app.pid")" 2>/dev/null; then
		echo "no window: the program exited before a window opened" >"$2/window.err"
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
		geometry="$(sed -n 's/.*: ("[^"]*" "[^"]*")  *\([0-9]*x[0-9]*\)+.*/\1/p' "$2/window.txt")"
		w="${geometry%x*}"
		h="${geometry#*x}"
		echo "$geometry" >"$2/geometry"
		if [ -z "$geometry" ] || [ "$w" -lt 400 ] || [ "$h" -lt 300 ]; then
			echo "the window is too small or unreadable: $(cat "$2/window.txt")" >"$2/window.err"
			exit 1
		fi
		if [ ! -s "$2/screen.xwd" ]; then
			echo "no screenshot of the window" >"$2/window.err"
			exit 1
		fi
		if grep -qi "panic\|fatal" "$2/app.log"; then
			echo "the program logged a crash: $(grep -i -m 3 "panic\|fatal" "$2/app.log")" >"$2/window.err"
			exit 1
		fi
		exit 0
	fi
	i=$((i + 1))
	sleep 0.5
done
echo "no window: no \"$3\" window after 60 s" >"$2/window.err"
kill "$(cat "$2/app.pid")"
exit 1
