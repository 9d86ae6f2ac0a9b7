package engine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/mapfile"
	"github.com/darkroomlabs/darkroom/engine/sysmem/cgrouptest"
)

// TestFromDiskUnderMemoryLimit: a model loaded on the CPU in a control group whose
// memory limit leaves less than the weights need beside the engine's reserve (1 GiB:
// cgrouptest) says that its weights are read from the disk (FromDisk) and still
// generates; loaded outside it, on a machine with memory to spare, it says nothing.
// The chain is engine/sysmem's limit, the host model's populate, Runner.FromDisk and
// the engine's sentence.
func TestFromDiskUnderMemoryLimit(t *testing.T) {
	if mapfile.Off() {
		t.Skip("mapping is turned off (DARKROOM_NO_MMAP)")
	}
	if cgrouptest.Child(t) {
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
	_, out := cgrouptest.Run(t, 1<<30, "TestFromDiskUnderMemoryLimit", "ENGINE_FROMDISK_MODEL="+dir)
	if !strings.Contains(out, `fromdisk="Its weights (`) || !strings.Contains(out, "are read from the disk as they are needed") {
		t.Errorf("in a 1 GiB group the engine did not say its weights are read from the disk:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "fromdisk=") {
			t.Log(line)
		}
	}
}
