package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGenerated: the assembly files in engine/kernels are what the generator writes
// now — a fix typed into a generated file and not into its generator (session 45's
// VMOVSS stores in dotrows_amd64.s) would be undone by the next go generate.
func TestGenerated(t *testing.T) {
	for what, file := range map[string]string{"micro": "microkernel_amd64.s", "dots": "dotrows_amd64.s", "qgemm": "qkernel_amd64.s"} {
		have, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, source(what)) {
			t.Errorf("%s is not what genkernels writes: run go generate ./engine/kernels/", file)
		}
	}
}
