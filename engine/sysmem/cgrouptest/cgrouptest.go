// Package cgrouptest runs part of a test in a child process inside a memory control
// group with a limit — a real limit, as a container's or a service's, where a test
// may make one: root, with cgroup v1's memory controller mounted at
// /sys/fs/cgroup/memory, as on this project's machines. Elsewhere the test is
// skipped.
package cgrouptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// envGroup names, in the child's environment, the group it is to join.
const envGroup = "CGROUPTEST_GROUP"

// Child reports whether this process is a child Run started, after moving it into
// its group: the test then does its limited part, and prints what the parent checks.
func Child(t *testing.T) bool {
	group := os.Getenv(envGroup)
	if group == "" {
		return false
	}
	if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatalf("join %s: %v", group, err)
	}
	return true
}

// Run runs the test named test (the caller's, which starts with Child) again in a
// child process inside a new memory group limited to limit bytes, env added to its
// environment, and returns the group's name (as /proc/self/cgroup says it) and the
// child's output; a child that fails fails t. Where no limited group can be made, t
// is skipped.
func Run(t *testing.T, limit int64, test string, env ...string) (name, out string) {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("darkroom-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup v1 memory group here: %v", err)
	}
	defer os.Remove(dir)
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Skipf("cannot limit a cgroup v1 memory group here: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), envGroup+"="+dir), env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a group limited to %d bytes: %v\n%s", test, limit, err, b)
	}
	return "/" + filepath.Base(dir), string(b)
}
