package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/mapfile"
)

// TestFromDiskUnderMemoryLimit: a model loaded on the CPU in a control group whose
// memory limit leaves less than the weights need beside the engine's reserve (a
// cgroup v1 memory group of 1 GiB, made where this test may: root, the v1 memory
// controller mounted, as on this project's machines) says that its weights are read
// from the disk (FromDisk) and still generates; loaded outside it, on a machine
// with memory to spare, it says nothing. The chain is engine/sysmem's limit, the
// host model's populate, Runner.FromDisk and the engine's sentence.
func TestFromDiskUnderMemoryLimit(t *testing.T) {
	if mapfile.Off() {
		t.Skip("mapping is turned off (DARKROOM_NO_MMAP)")
	}
	if group := os.Getenv("ENGINE_FROMDISK_GROUP"); group != "" {
		if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			t.Fatal(err)
		}
		e := loadGo(t, os.Getenv("ENGINE_FROMDISK_MODEL"), false)
		if _, err := e.Generate(context.Background(), Request{Prompt: "What is Unix?", Mode: AR, Sampling: Sampling{MaxNewTokens: 4}}); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("fromdisk=%q\n", e.FromDisk())
		return
	}
	dir := writeTinyModel(t)
	if s := loadGo(t, dir, false).FromDisk(); s != "" {
		t.Logf("outside a limit, on this machine: %q (little memory available?)", s)
	}
	group := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("engine-fromdisk-%d", os.Getpid()))
	if err := os.Mkdir(group, 0o755); err != nil {
		t.Skipf("cannot make a cgroup v1 memory group here: %v", err)
	}
	defer os.Remove(group)
	if err := os.WriteFile(filepath.Join(group, "memory.limit_in_bytes"), []byte(strconv.Itoa(1<<30)), 0o644); err != nil {
		t.Skipf("cannot limit a cgroup v1 memory group here: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFromDiskUnderMemoryLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ENGINE_FROMDISK_GROUP="+group, "ENGINE_FROMDISK_MODEL="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a 1 GiB group: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `fromdisk="Its weights (`) || !strings.Contains(string(out), "are read from the disk as they are needed") {
		t.Errorf("in a 1 GiB group the engine did not say its weights are read from the disk:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "fromdisk=") {
			t.Log(line)
		}
	}
}
