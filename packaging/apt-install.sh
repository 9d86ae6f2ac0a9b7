# Sourced by the packaging scripts: apt_install NAME PACKAGE… installs those of the
# Debian/Ubuntu packages that are missing (as root, or through sudo), saying so as
# NAME, and nothing when all are there.
apt_install() {
	local who="$1" sudo="" p
	shift
	local missing=()
	for p in "$@"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
	echo "$who: installing ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
