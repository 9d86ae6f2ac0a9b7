package sysmem

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/sysmem/cgrouptest"
)

const gb = 1 << 30

// fakeRoot writes files (path relative to the root → content) under a new folder.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		path := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// meminfo24 is a 24 GiB machine with 20 GiB available.
const meminfo24 = "MemTotal:       25165824 kB\nMemFree:         1000000 kB\nMemAvailable:   20971520 kB\n"

const hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestReadLimits(t *testing.T) {
	for _, c := range []struct {
		name         string
		files        map[string]string
		total, avail int64
		limit        string
	}{{
		name:  "no control groups",
		files: map[string]string{"proc/meminfo": meminfo24},
		total: 24 * gb, avail: 20 * gb,
	}, {
		// Both hierarchies mounted (this machine's): the v2 group has no memory
		// files, v1's memory controller limits the group to 10 GiB, of which it holds
		// 6 GiB, 4 of them page cache.
		name: "cgroup v1 limit",
		files: map[string]string{
			"proc/meminfo":                                    meminfo24,
			"proc/self/cgroup":                                "4:memory:/dr10\n5:devices:/\n0::/\n",
			"proc/self/mountinfo":                             hybridMounts,
			"sys/fs/cgroup/memory/dr10/memory.stat":           "cache 4294967296\nrss 2147483648\nhierarchical_memory_limit 10737418240\ntotal_cache 4294967296\n",
			"sys/fs/cgroup/memory/dr10/memory.usage_in_bytes": "6442450944\n",
		},
		total: 10 * gb, avail: 8 * gb, limit: "/dr10",
	}, {
		name: "cgroup v1 without a limit",
		files: map[string]string{
			"proc/meminfo":        meminfo24,
			"proc/self/cgroup":    "4:memory:/user.slice\n0::/\n",
			"proc/self/mountinfo": hybridMounts,
			"sys/fs/cgroup/memory/user.slice/memory.stat":           "cache 0\nhierarchical_memory_limit 9223372036854771712\n",
			"sys/fs/cgroup/memory/user.slice/memory.usage_in_bytes": "1000\n",
		},
		total: 24 * gb, avail: 20 * gb,
	}, {
		// A unit's group without a limit inside a slice limited to 12 GiB that holds
		// 9 GiB, 1 of it page cache; memory.high 16 GiB on the unit itself.
		name: "cgroup v2 limit above",
		files: map[string]string{
			"proc/meminfo":                                             meminfo24,
			"proc/self/cgroup":                                         "0::/apps.slice/darkroom.service\n",
			"proc/self/mountinfo":                                      "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
			"sys/fs/cgroup/apps.slice/memory.max":                      "12884901888\n",
			"sys/fs/cgroup/apps.slice/memory.high":                     "max\n",
			"sys/fs/cgroup/apps.slice/memory.current":                  "9663676416\n",
			"sys/fs/cgroup/apps.slice/memory.stat":                     "anon 8589934592\nfile 1073741824\n",
			"sys/fs/cgroup/apps.slice/darkroom.service/memory.max":     "max\n",
			"sys/fs/cgroup/apps.slice/darkroom.service/memory.high":    "17179869184\n",
			"sys/fs/cgroup/apps.slice/darkroom.service/memory.current": "1073741824\n",
			"sys/fs/cgroup/apps.slice/darkroom.service/memory.stat":    "anon 1073741824\nfile 0\n",
		},
		total: 12 * gb, avail: 4 * gb, limit: "/apps.slice/darkroom.service",
	}, {
		// A container: its own group mounted as the hierarchy's root, limited to
		// 8 GiB (docker --memory 8g) and holding 1 GiB.
		name: "cgroup v2 container",
		files: map[string]string{
			"proc/meminfo":                 meminfo24,
			"proc/self/cgroup":             "0::/docker/abc\n",
			"proc/self/mountinfo":          "600 590 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n",
			"sys/fs/cgroup/memory.max":     "8589934592\n",
			"sys/fs/cgroup/memory.current": "1073741824\n",
			"sys/fs/cgroup/memory.stat":    "anon 1073741824\nfile 0\n",
		},
		total: 8 * gb, avail: 7 * gb, limit: "/docker/abc",
	}, {
		name: "cgroup v2 container, namespaced",
		files: map[string]string{
			"proc/meminfo":                 meminfo24,
			"proc/self/cgroup":             "0::/\n",
			"proc/self/mountinfo":          "600 590 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n",
			"sys/fs/cgroup/memory.max":     "8589934592\n",
			"sys/fs/cgroup/memory.current": "1073741824\n",
		},
		total: 8 * gb, avail: 7 * gb, limit: "/",
	}, {
		// The host's own root group: no memory files.
		name: "cgroup v2 root",
		files: map[string]string{
			"proc/meminfo":               meminfo24,
			"proc/self/cgroup":           "0::/\n",
			"proc/self/mountinfo":        "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
			"sys/fs/cgroup/cgroup.procs": "1\n",
		},
		total: 24 * gb, avail: 20 * gb,
	}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := readRoot(fakeRoot(t, c.files))
			if err != nil {
				t.Fatal(err)
			}
			if m.Total != c.total || m.Available != c.avail || m.Limit != c.limit || m.Machine != 24*gb {
				t.Errorf("got total %.2f GiB, available %.2f GiB, machine %.2f GiB, limit %q; want %.2f, %.2f, 24, %q",
					float64(m.Total)/gb, float64(m.Available)/gb, float64(m.Machine)/gb, m.Limit,
					float64(c.total)/gb, float64(c.avail)/gb, c.limit)
			}
		})
	}
}

// TestReadMachine holds Read to this machine's /proc/meminfo.
func TestReadMachine(t *testing.T) {
	m, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	total, _, err := meminfo("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	if m.Machine != total || m.Total > m.Machine || m.Available > m.Total || m.Total <= 0 {
		t.Errorf("%+v against MemTotal %d", m, total)
	}
}

// TestReadRealLimit has Read run in a child process in a memory group limited to 3
// GiB (cgrouptest): a real limit, not a fake file.
func TestReadRealLimit(t *testing.T) {
	if cgrouptest.Child(t) {
		m, err := Read()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("total=%d available=%d limit=%s\n", m.Total, m.Available, m.Limit)
		return
	}
	group, out := cgrouptest.Run(t, 3*gb, "TestReadRealLimit")
	var total, avail int64
	var limit string
	for _, line := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(line, "total=%d available=%d limit=%s", &total, &avail, &limit); err == nil {
			break
		}
	}
	if total != 3*gb || avail > 3*gb || avail < 2*gb || !strings.HasSuffix(limit, group) {
		t.Errorf("in a group limited to 3 GiB: total %d, available %d, limit %q (want 3 GiB, 2–3 GiB, …%s)\n%s",
			total, avail, limit, group, out)
	}
}
