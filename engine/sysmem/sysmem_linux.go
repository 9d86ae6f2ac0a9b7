//go:build linux

package sysmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func read() (Memory, error) { return readRoot("/") }

// readRoot is Read with the file system's root at root (tests give a folder of fake
// /proc and /sys files).
//
// The machine's figures are /proc/meminfo's MemTotal and MemAvailable. The limit is
// the memory control group's (cgroupLimit): its limit lowers Total, and its limit
// less what the group holds that it cannot drop — its usage less its page cache —
// lowers Available, as MemAvailable counts the machine's page cache as available.
func readRoot(root string) (Memory, error) {
	total, avail, err := meminfo(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Total: total, Available: avail, Machine: total}
	g, ok := cgroupLimit(root)
	if !ok {
		return m, nil
	}
	if g.limit < m.Total {
		m.Total, m.Limit = g.limit, g.path
	}
	if free := max(0, g.limit-max(0, g.used-g.cache)); free < m.Available {
		m.Available, m.Limit = free, g.path
	}
	return m, nil
}

// meminfo reads MemTotal and MemAvailable (0 on kernels before 3.14, which lack
// it) from path, a /proc/meminfo.
func meminfo(path string) (total, avail int64, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "MemTotal":
			total = kb << 10
		case "MemAvailable":
			avail = kb << 10
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("%s has no MemTotal", path)
	}
	return total, avail, nil
}

// group is a memory control group's limit and what it holds.
type group struct {
	path  string // as /proc/self/cgroup names it
	limit int64  // the lowest limit of the group and the groups above it
	used  int64  // what the group holds (the group where the limit is, in cgroup v2)
	cache int64  // the page cache in used, which the kernel drops under the limit
}

// unlimited is where a limit means none: cgroup v1 writes 2^63 rounded down to a
// page for "no limit", v2 "max".
const unlimited = 1 << 62

// cgroupLimit finds the memory control group this process is in and its limit
// (group); ok is false where there is no limit or it cannot be read. cgroup v2 (the
// unified hierarchy: memory.max and memory.high, up to the root, the tightest with
// what its group holds) comes first; cgroup v1's memory controller
// (hierarchical_memory_limit, which already takes the groups above into account)
// where the v2 groups have no memory files, as on machines that mount both.
func cgroupLimit(root string) (g group, ok bool) {
	raw, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return group{}, false
	}
	mounts, _ := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	var v1path, v2path string
	have1, have2 := false, false
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2path, have2 = f[2], true
		case contains(strings.Split(f[1], ","), "memory"):
			v1path, have1 = f[2], true
		}
	}
	if have2 {
		if dir, mount, found := cgroupDir(root, string(mounts), v2path, "cgroup2", ""); found {
			if g, ok := v2Limit(dir, mount, v2path); ok {
				return g, true
			}
		}
	}
	if have1 {
		if dir, _, found := cgroupDir(root, string(mounts), v1path, "cgroup", "memory"); found {
			return v1Limit(dir, v1path)
		}
	}
	return group{}, false
}

// cgroupDir is the folder of control group path in the hierarchy mounted with file
// system type fstype (and, for cgroup v1, super option opt), and that mount's folder:
// /proc/self/mountinfo's mount point, below it path less the mount's own root (a
// container sees its group mounted as the root).
func cgroupDir(root, mountinfo, path, fstype, opt string) (dir, mount string, ok bool) {
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, found := strings.Cut(line, " - ")
		if !found {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || b[0] != fstype || opt != "" && !contains(strings.Split(b[2], ","), opt) {
			continue
		}
		mroot, point := a[3], a[4]
		rel := path
		if mroot != "/" {
			if path != mroot && !strings.HasPrefix(path, mroot+"/") {
				continue // another part of the hierarchy
			}
			rel = strings.TrimPrefix(path, mroot)
		}
		mount = filepath.Join(root, point)
		return filepath.Join(mount, rel), mount, true
	}
	return "", "", false
}

// v2Limit walks from dir up to mount and keeps the group that leaves the least: each
// one's memory.max or memory.high, the lower, less what it holds that its page cache
// does not account for. The mount's own folder is read too: the hierarchy's root has
// no memory.max, but a container (docker run --memory) sees its own group mounted
// there.
func v2Limit(dir, mount, path string) (g group, ok bool) {
	best := int64(unlimited)
	for d := dir; strings.HasPrefix(d, mount); d = filepath.Dir(d) {
		limit := int64(unlimited)
		for _, name := range []string{"memory.max", "memory.high"} {
			if v, err := readInt(filepath.Join(d, name)); err == nil && v < limit {
				limit = v
			}
		}
		if limit >= unlimited {
			continue
		}
		used, _ := readInt(filepath.Join(d, "memory.current"))
		stat := readStat(filepath.Join(d, "memory.stat"))
		if left := limit - max(0, used-stat["file"]); left < best {
			best = left
			g = group{path: path, limit: limit, used: used, cache: stat["file"]}
			ok = true
		}
		if d == mount {
			break
		}
	}
	return g, ok
}

// v1Limit reads cgroup v1's memory controller in dir.
func v1Limit(dir, path string) (group, bool) {
	stat := readStat(filepath.Join(dir, "memory.stat"))
	limit, have := stat["hierarchical_memory_limit"]
	if !have {
		v, err := readInt(filepath.Join(dir, "memory.limit_in_bytes"))
		if err != nil {
			return group{}, false
		}
		limit = v
	}
	if limit >= unlimited {
		return group{}, false
	}
	used, _ := readInt(filepath.Join(dir, "memory.usage_in_bytes"))
	cache, have := stat["total_cache"]
	if !have {
		cache = stat["cache"]
	}
	return group{path: path, limit: limit, used: used, cache: cache}, true
}

// readInt reads a control file holding one number; "max" is unlimited.
func readInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(raw))
	if s == "max" {
		return unlimited, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return int64(min(v, unlimited)), nil
}

// readStat reads a memory.stat file's "name value" lines (nothing where it is
// missing).
func readStat(path string) map[string]int64 {
	stat := map[string]int64{}
	raw, err := os.ReadFile(path)
	if err != nil {
		return stat
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				stat[k] = int64(min(n, unlimited))
			}
		}
	}
	return stat
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
