package model

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/pkg/ml/context"
)

// hostModelFits reports whether float32 host copies of every weight in ctx (what
// HostDecoder keeps, next to the context's own variables) stay under a quarter of the
// machine's memory: small models (Darkroom Mini: a few MB) always do; a large
// BF16 or quantized checkpoint keeps its compact storage and the in-graph conversion.
func hostModelFits(ctx *context.Context) bool {
	var elems int64
	ctx.In(Scope).EnumerateVariablesInScope(func(v *context.Variable) {
		n := int64(v.Shape().Size())
		if strings.HasSuffix(v.Name(), QWeightSuffix) && v.Shape().DType.Size() == 1 {
			n *= 2 // int4: two values per byte (int8 overestimates, harmlessly)
		}
		elems += n
	})
	return 4*elems <= totalMemory()/4
}

// totalMemory is the machine's RAM in bytes (Linux /proc/meminfo), or 8 GiB when it
// cannot be read.
func totalMemory() int64 {
	const fallback = 8 << 30
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return fallback
}
