#!/usr/bin/env bash
# Compares Darkroom's float32 GEMM (engine/kernels.MulNT) with OpenBLAS (Debian's
# libopenblas0-pthread through numpy) at the same shapes — the Mini's head-sized
# [256,64]×[64,4096], the 26B's [256,2816]×[2816,704], a square 2048³ and the Mini's
# [256,512]×[512,512] — in one run, the AR step's memory-bound GEMV against OpenBLAS's
# float32 GEMV read rate, then `darkroom bench` on the built-in Darkroom Mini for the
# engine's forward FLOP/s, and prints every rate and its ratio to OpenBLAS.
# With a model directory as its argument (bench-peers.sh /path/to/dg26b-int4) it also
# runs `darkroom bench --mode ar` on that model and prints an AR token against its
# memory bound — the weight bytes a token reads at models/speed's calibrated read rate
# and at OpenBLAS's GEMV read rate from this same run.
# Installs python3-numpy and libopenblas0-pthread with apt when they are missing (sudo
# only when not root). Each rate is the mean over about a second of repeats, as
# `go test -bench` reports it. Takes about two minutes; run it on an idle machine.
set -euo pipefail
ar_model=""
if [ $# -gt 0 ]; then ar_model=$(realpath "$1"); fi
cd "$(dirname "$0")/.."
if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# OpenBLAS through Debian's numpy: Debian's python3, not another one first on PATH.
py=/usr/bin/python3
if [ ! -x "$py" ]; then py=python3; fi
have_openblas() {
	"$py" -c 'import numpy as np
np.ones((2, 2), np.float32) @ np.ones((2, 2), np.float32)
exit(not any("openblas" in l for l in open("/proc/self/maps")))' 2>/dev/null
}
if ! have_openblas; then
	as_root=()
	if [ "$(id -u)" != 0 ]; then as_root=(sudo); fi
	echo "installing python3-numpy and libopenblas0-pthread …" >&2
	"${as_root[@]}" apt-get update -qq >&2
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-numpy libopenblas0-pthread >&2
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
echo "building …" >&2
go build -tags headless -o "$work/darkroom" .
go test -c -o "$work/kernels.test" ./engine/kernels/

# numpy's and our rate at each shape in turn, so both see the same machine.
cat >"$work/blas.py" <<'PY'
import sys, time, numpy as np
m, k, n = map(int, sys.argv[1].split("x"))
rng = np.random.default_rng(1)
a = rng.standard_normal((m, k), dtype=np.float32)
b = rng.standard_normal((k, n), dtype=np.float32)
a @ b
runs, t0 = 0, time.perf_counter()
while True:
    a @ b
    runs += 1
    t = time.perf_counter() - t0
    if t >= 1.0:
        break
print(sys.argv[1], f"{2 * m * k * n * runs / t / 1e9:.1f}")
if sys.argv[2:] == ["lib"]:  # which BLAS numpy really called (Debian picks libblas.so.3 by alternatives)
    blas = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l and ".so" in l})
    print("lib", " ".join(blas) or "unknown")
PY
: >"$work/blas.txt"
: >"$work/ours.txt"
lib=lib
for shape in 256x64x4096 256x2816x704 2048x2048x2048 256x512x512; do
	echo "$shape: OpenBLAS, Darkroom …" >&2
	"$py" "$work/blas.py" "$shape" $lib >>"$work/blas.txt"
	lib=
	"$work/kernels.test" -test.run '^$' -test.bench "^BenchmarkPeers\$/^$shape\$" -test.benchtime 1s |
		awk '/^BenchmarkPeers\// { split($1, p, "/"); sub(/-[0-9]+$/, "", p[2]); print p[2], $(NF-1) }' >>"$work/ours.txt"
done

# The AR step is memory-bound: our GEMV on weights far past the caches (bf16, the int4
# profile's int4 g32 and per-row int8, and int8 in groups of 32) against the rate
# OpenBLAS's float32 GEMV reads memory at.
echo "GEMV: OpenBLAS, Darkroom …" >&2
"$py" - >"$work/blas_gemv.txt" <<'PY'
import time, numpy as np
a = np.ones((32768, 2048), np.float32)
x = np.ones(2048, np.float32)
a @ x
runs, t0 = 0, time.perf_counter()
while True:
    a @ x
    runs += 1
    t = time.perf_counter() - t0
    if t >= 1.0:
        break
print(f"{a.nbytes * runs / t / 1e9:.1f}")
PY
"$work/kernels.test" -test.run '^$' -test.bench '^BenchmarkPeersGEMV$' -test.benchtime 1s |
	awk '/^BenchmarkPeersGEMV\// { split($1, p, "/"); sub(/-[0-9]+$/, "", p[2]); print p[2], $(NF-1) }' >"$work/ours_gemv.txt"

echo "darkroom bench (Darkroom Mini) …" >&2
"$work/darkroom" bench --json --runs 3 >"$work/bench.json"
if [ -n "$ar_model" ]; then
	echo "darkroom bench --mode ar ($ar_model) …" >&2
	"$work/darkroom" bench --json --model "$ar_model" --mode ar --runs 2 --max-new-tokens 16 >"$work/bench_ar.json"
fi

load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
"$py" - "$work" "$load_before" "$load_after" <<'PY'
import json, os, sys
work = sys.argv[1]
blas, lib = {}, "unknown"
for line in open(f"{work}/blas.txt"):
    k, v = line.split(maxsplit=1)
    if k == "lib":
        lib = v.strip()
    else:
        blas[k] = float(v)
ours = {k: float(v) for k, v in (l.split() for l in open(f"{work}/ours.txt"))}
print(f"OpenBLAS: {lib}")
print(f"{'float32 GEMM [m,k]x[k,n]':28} {'Darkroom':>10} {'OpenBLAS':>10} {'ratio':>7}")
for shape, b in blas.items():
    o = ours.get(shape, 0.0)
    m, k, n = shape.split("x")
    print(f"{'[%s,%s]x[%s,%s]' % (m, k, k, n):28} {o:10.1f} {b:10.1f} {o / b:7.2f}")
gemv = float(open(f"{work}/blas_gemv.txt").read())
for line in open(f"{work}/ours_gemv.txt"):
    fmt, gbs = line.split()
    print(f"{'GEMV ' + fmt + ', GB/s read':28} {float(gbs):10.1f} {gemv:10.1f} {float(gbs) / gemv:7.2f}  (OpenBLAS: float32 GEMV)")
rep = json.load(open(f"{work}/bench.json"))
mini = blas["256x64x4096"]
fwd = rep.get("forward_gflops", 0.0)
print(f"{'darkroom bench forward':28} {fwd:10.1f} {mini:10.1f} {fwd / mini:7.2f}  (vs OpenBLAS at the Mini's shape)")
print(f"{'  host matmul, head shape':28} {rep.get('host_matmul_gflops', 0.0):10.1f}")
d, a = rep["diffusion"], rep["ar"]
print(f"Mini canvas {d['median_canvas_ms']:.0f} ms, AR token {a['median_canvas_ms']:.2f} ms, "
      f"diffusion {d['tokens_per_s']:.1f} tok/s, AR {a['tokens_per_s']:.1f} tok/s, path {rep['path']}")
if os.path.exists(f"{work}/bench_ar.json"):
    ar = json.load(open(f"{work}/bench_ar.json"))
    a, b = ar["ar"], ar["ar"]["bound"]
    ms, gb = a["median_canvas_ms"], b["unit_bytes"] / 1e9
    blas_ms = gb / gemv * 1e3
    print(f"AR on {ar['model']}: {ms:.0f} ms a token reading {gb:.2f} GB ({gb / ms * 1e3:.1f} GB/s); "
          f"bound {b['memory_ms']:.0f} ms at the calibrated {ar.get('mem_read_bytes_per_s', 0) / 1e9:.1f} GB/s "
          f"({b['of_bound']:.0%}), {blas_ms:.0f} ms at OpenBLAS's GEMV {gemv:.1f} GB/s ({blas_ms / ms:.0%})")
print("GFLOP/s unless marked; ratio = Darkroom ÷ OpenBLAS")
print(f"load average before {sys.argv[2]}, after {sys.argv[3]} (on {os.cpu_count()} CPUs: above that, the rates are shared)")
PY
