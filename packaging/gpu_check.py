"""Transformers' half of packaging/gpu-check.sh (see there).

  gpu_check.py probe             exit 0 when torch sees a CUDA GPU and transformers has DiffusionGemma
  gpu_check.py build WORK        random DiffusionGemma at the real 26B dimensions, 6 layers (5 sliding + 1
                                 full), save_pretrained to WORK/model; the ids both engines are fed
                                 (WORK/ids.json); transformers' logits (WORK/hf_*.npy) and timings
                                 (WORK/hf.json) on the GPU in bf16
  gpu_check.py report WORK OUT   Darkroom's logits and timings (WORK/dr_*.json, WORK/dr/*.f32) against
                                 transformers': prints the table, writes OUT (JSON)
  gpu_check.py ids WORK          (--rehearse) the ids for WORK/model's vocabulary and canvas, as build
                                 draws them, without torch
  gpu_check.py rehearsal WORK OUT  (--rehearse) Darkroom's half of report alone: the same readers and
                                 checks, its numbers, "rehearsal": true
"""

import json
import math
import os
import random
import sys
import time
from array import array

CANVAS = 256
PROMPT = 64
STEPS = 16
AR_TOKENS = 64
LAYERS = 6
REAL_LAYERS = 30


def probe():
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"no torch/transformers ({e.name})")
        return 1
    if not torch.cuda.is_available():
        print("torch sees no CUDA GPU")
        return 1
    major = int(transformers.__version__.split(".")[0])
    if major < 5 or not hasattr(transformers, "DiffusionGemmaForBlockDiffusion"):
        print(f"transformers {transformers.__version__} has no DiffusionGemma (needs >= 5)")
        return 1
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name(0)}")
    return 0


def text_config():
    from transformers import DiffusionGemmaTextConfig

    # The released checkpoint's dimensions (convert_diffusion_gemma_weights.py), 6 of its 30 layers.
    return DiffusionGemmaTextConfig(
        hidden_size=2816,
        intermediate_size=2112,
        num_hidden_layers=LAYERS,
        layer_types=["sliding_attention"] * 5 + ["full_attention"],
        num_attention_heads=16,
        num_key_value_heads=8,
        num_global_key_value_heads=2,
        head_dim=256,
        global_head_dim=512,
        use_bidirectional_attention="vision",
        num_experts=128,
        moe_intermediate_size=704,
        top_k_experts=8,
        sliding_window=1024,
        final_logit_softcapping=30.0,
        max_position_embeddings=262_144,
        vocab_size=262_144,
    )


def softcap(logits, cap=30.0):
    import torch

    logits = logits.to(torch.float32)
    return torch.tanh(logits / cap) * cap


def sync():
    import torch

    torch.cuda.synchronize()


def build(work):
    import numpy as np
    import torch
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

    torch.manual_seed(0)
    cfg = DiffusionGemmaConfig(text_config=text_config(), canvas_length=CANVAS)  # text only: no vision tower
    t0 = time.time()
    with torch.device("cuda"):
        torch.set_default_dtype(torch.bfloat16)
        model = DiffusionGemmaForBlockDiffusion(cfg)
        torch.set_default_dtype(torch.float32)
    model.eval()
    build_s = time.time() - t0
    t0 = time.time()
    model.save_pretrained(os.path.join(work, "model"), max_shard_size="5GB")  # HF's own names and shards
    save_s = time.time() - t0

    g = torch.Generator().manual_seed(1)
    V = cfg.text_config.vocab_size
    prompt, canvas = write_ids(work, V, CANVAS, lambda lo, hi, n: torch.randint(lo, hi, (n,), generator=g).tolist())

    dev = "cuda"
    p = torch.tensor([prompt], device=dev)
    c = torch.tensor([canvas], device=dev)
    lm_head = model.lm_head
    with torch.no_grad():
        # The encoder over the prompt (writes the cache), then the first decoder step over the canvas.
        enc = model.model.encoder(input_ids=p, use_cache=True)
        enc_logits = softcap(lm_head(enc.last_hidden_state))[0]
        cache = enc.past_key_values
        dec_logits = model(past_key_values=cache, decoder_input_ids=c).logits[0]
        np.save(os.path.join(work, "hf_encoder.npy"), enc_logits.float().cpu().numpy())
        np.save(os.path.join(work, "hf_decoder.npy"), dec_logits.float().cpu().numpy())

        # A 256-token canvas at a fixed 16 steps: 16 decoder passes, each self-conditioned on the
        # previous step's logits, then the encoder commits the canvas. Sampling is left out (it is
        # cheap next to the passes), so this is transformers' best case.
        def canvas_run():
            prev = None
            ids = c
            for _ in range(STEPS):
                out = model(past_key_values=cache, decoder_input_ids=ids, self_conditioning_logits=prev)
                prev = out.logits
                ids = prev.argmax(-1)
            return ids

        canvas_run()  # warm-up
        sync()
        t0 = time.time()
        canvas_run()
        sync()
        canvas_s = time.time() - t0

        # AR: one token per encoder pass with the cache, greedy.
        enc2 = model.model.encoder(input_ids=p, use_cache=True)
        cache2 = enc2.past_key_values
        tok = softcap(lm_head(enc2.last_hidden_state[:, -1:])).argmax(-1)
        for _ in range(4):  # warm-up
            out = model.model.encoder(input_ids=tok, past_key_values=cache2, use_cache=True)
            tok = softcap(lm_head(out.last_hidden_state[:, -1:])).argmax(-1)
        sync()
        t0 = time.time()
        for _ in range(AR_TOKENS):
            out = model.model.encoder(input_ids=tok, past_key_values=cache2, use_cache=True)
            tok = softcap(lm_head(out.last_hidden_state[:, -1:])).argmax(-1)
        sync()
        ar_s = time.time() - t0

    rep = {
        "build_s": build_s,
        "save_s": save_s,
        "params": sum(t.numel() for t in model.parameters()),
        "diffusion_canvas_ms": canvas_s * 1000,
        "diffusion_tokens_s": CANVAS / canvas_s,
        "ar_tokens_s": AR_TOKENS / ar_s,
        "max_memory_bytes": torch.cuda.max_memory_allocated(),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
    }
    import transformers

    rep["transformers"] = transformers.__version__
    with open(os.path.join(work, "hf.json"), "w") as f:
        json.dump(rep, f, indent=2)
    print(json.dumps(rep))
    return 0


def write_ids(work, vocab, canvas_len, randint):
    """The ids both engines are fed (WORK/ids.json): BOS and PROMPT-1 random ids, a random canvas.
    randint(lo, hi, n) draws n ids in [lo, hi)."""
    prompt = [2] + randint(3, vocab, PROMPT - 1)
    canvas = randint(0, vocab, canvas_len)
    with open(os.path.join(work, "ids.json"), "w") as f:
        json.dump({"prompt": prompt, "canvas": canvas}, f)
    return prompt, canvas


def ids(work):
    """write_ids for WORK/model's vocabulary and canvas length, drawn by Python's own generator."""
    cfg = json.load(open(os.path.join(work, "model", "config.json")))
    rng = random.Random(1)
    write_ids(work, cfg["text_config"]["vocab_size"], cfg.get("canvas_length", CANVAS),
              lambda lo, hi, n: [rng.randrange(lo, hi) for _ in range(n)])
    return 0


def compare(ref, got):
    """Logits agreement: argmax agreement, max |Δ| relative to the largest |logit|, mean KL(ref‖got)."""
    import numpy as np

    ref = ref.astype(np.float64)
    got = got.astype(np.float64).reshape(ref.shape)
    agree = float((ref.argmax(-1) == got.argmax(-1)).mean())
    rel = float(np.abs(ref - got).max() / max(np.abs(ref).max(), 1e-9))

    def logp(x):
        m = x.max(-1, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))

    lr, lg = logp(ref), logp(got)
    kl = float((np.exp(lr) * (lr - lg)).sum(-1).mean())
    return {"argmax_agree": agree, "max_rel_diff": rel, "mean_kl": kl}


def layer_bytes(model_dir):
    """Bytes of the weights in the layers (scale with the layer count) and of the rest."""
    import struct

    layers = rest = 0
    for name in os.listdir(model_dir):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(model_dir, name), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        for key, t in header.items():
            if key == "__metadata__":
                continue
            size = t["data_offsets"][1] - t["data_offsets"][0]
            if ".layers." in key:
                layers += size
            else:
                rest += size
    return layers, rest


def darkroom_half(work):
    """Darkroom's outputs in WORK, read and checked: the logits files hold [prompt, vocab] and
    [canvas, vocab] float32 values as `gpu logits` reports, and the bench reports the timings. A
    field missing or renamed fails here (KeyError), in the rehearsal as on the GPU."""
    dr = json.load(open(os.path.join(work, "dr_logits.json")))
    bench = {p: json.load(open(os.path.join(work, f"dr_bench_{p}.json"))) for p in ("bf16", "int4")}
    mem = json.load(open(os.path.join(work, "dr_memory.json")))
    for key, rows in (("encoder_logits", dr["prompt_tokens"]), ("decoder_logits", dr["canvas_length"])):
        want = rows * dr["vocab"] * 4
        if os.path.getsize(dr[key]) != want:
            raise SystemExit(f"gpu-check: {dr[key]} holds {os.path.getsize(dr[key])} bytes, want {rows} × {dr['vocab']} float32")
    d = {"logits": dr, "backend": bench["bf16"]["backend"]}
    for p, b in bench.items():
        d[p] = {"canvas_ms": b["diffusion"]["median_canvas_ms"], "diffusion_tokens_s": b["diffusion"]["tokens_per_s"],
                "ar_tokens_s": b["ar"]["tokens_per_s"], "device_memory_bytes": mem[f"{p}_peak_bytes"]}
    d["diffusion_vs_ar_bf16"] = d["bf16"]["diffusion_tokens_s"] / d["bf16"]["ar_tokens_s"]
    d["int4_layer_bytes"], _ = layer_bytes(os.path.join(work, "model-int4"))
    split = os.path.join(work, "dr_bench_split.json")
    if os.path.exists(split):  # left out where the split did not run (gpu-check.sh)
        b = json.load(open(split))
        d["int4_split"] = {"path": b["path"], "device_layers": b.get("device_layers", 0), "canvas_ms": b["diffusion"]["median_canvas_ms"],
                           "diffusion_tokens_s": b["diffusion"]["tokens_per_s"],
                           "device_memory_bytes": int(open(os.path.join(work, "dr_bench_split.mem")).read())}
    return d


def split_line(d):
    """The table's row for the int4 split, or None where it did not run."""
    s = d.get("int4_split")
    if not s:
        return None
    return (f"| int4 split, {s['device_layers']} of {LAYERS} layers on the GPU: canvas (ms) / diffusion tokens/s / device memory (GB) "
            f"| {s['canvas_ms']:.1f} / {s['diffusion_tokens_s']:.0f} / {s['device_memory_bytes'] / 1e9:.1f} | | |")


def rehearsal(work, out):
    """Darkroom's half alone (--rehearse): no transformers numbers to hold it against."""
    d = darkroom_half(work)
    for key in ("encoder_logits", "decoder_logits"):
        v = array("f")
        with open(d["logits"][key], "rb") as f:
            v.frombytes(f.read())
        if sys.byteorder != "little":
            v.byteswap()
        if not all(math.isfinite(x) for x in v):
            raise SystemExit(f"gpu-check: {d['logits'][key]} holds values that are not finite")
    res = {"rehearsal": True, "darkroom_backend": d["backend"], "canvas_steps": STEPS, "darkroom_bf16": d["bf16"],
           "darkroom_int4": d["int4"], "darkroom_diffusion_vs_ar_bf16": d["diffusion_vs_ar_bf16"],
           "int4_layer_bytes": d["int4_layer_bytes"], "darkroom_int4_split": d.get("int4_split")}
    lines = [f"gpu-check rehearsal: Darkroom's half on {d['backend']}, no transformers to compare with",
             "| what | bf16 | int4 |", "|---|---|---|"]
    for name, key, fmt in (("canvas, %d steps (ms)" % STEPS, "canvas_ms", ".1f"), ("diffusion tokens/s", "diffusion_tokens_s", ".0f"),
                           ("AR tokens/s", "ar_tokens_s", ".0f")):
        lines.append(f"| {name} | {d['bf16'][key]:{fmt}} | {d['int4'][key]:{fmt}} |")
    if s := d.get("int4_split"):
        lines.append(f"| int4 split, {s['device_layers']} layers in graphs ({s['path']}): canvas (ms) | | {s['canvas_ms']:.1f} |")
    print("\n".join(lines))
    res["table"] = lines
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
    return 0


def report(work, out):
    import numpy as np

    hf = json.load(open(os.path.join(work, "hf.json")))
    d = darkroom_half(work)
    dr = d["logits"]
    enc = compare(np.load(os.path.join(work, "hf_encoder.npy")), np.fromfile(dr["encoder_logits"], dtype="<f4"))
    dec = compare(np.load(os.path.join(work, "hf_decoder.npy")), np.fromfile(dr["decoder_logits"], dtype="<f4"))

    # Extrapolation to the real 30 layers. Canvas time: 5× the 6-layer time, an upper bound, since
    # the embedding and the LM head do not grow with the layers. Memory: the measured peak plus 24
    # more layers of int4 weights (the KV cache and activations per layer are left out: small here).
    lb4 = d["int4_layer_bytes"]
    mem30_int4 = d["int4"]["device_memory_bytes"] + lb4 * (REAL_LAYERS - LAYERS) / LAYERS
    canvas30_int4_ms = d["int4"]["canvas_ms"] * REAL_LAYERS / LAYERS
    rows = [
        ("encoder logits vs transformers: argmax agree / max rel diff / KL", enc, "≥ 0.99 / ≤ 0.02"),
        ("decoder logits vs transformers: argmax agree / max rel diff / KL", dec, "≥ 0.99 / ≤ 0.02"),
    ]
    res = {
        "gpu": hf["gpu"],
        "transformers": hf["transformers"],
        "torch": hf["torch"],
        "layers": LAYERS,
        "encoder_logits": enc,
        "decoder_logits": dec,
        "darkroom_backend": d["backend"],
        "canvas_steps": STEPS,
        "transformers_bf16": {"canvas_ms": hf["diffusion_canvas_ms"], "diffusion_tokens_s": hf["diffusion_tokens_s"],
                              "ar_tokens_s": hf["ar_tokens_s"], "max_memory_bytes": hf["max_memory_bytes"]},
        "darkroom_bf16": d["bf16"],
        "darkroom_int4": d["int4"],
        "darkroom_vs_transformers_diffusion": d["bf16"]["diffusion_tokens_s"] / hf["diffusion_tokens_s"],
        "darkroom_diffusion_vs_ar_bf16": d["diffusion_vs_ar_bf16"],
        "extrapolated_30_layers_int4": {"device_memory_bytes": mem30_int4, "canvas_ms_upper_bound": canvas30_int4_ms},
        "darkroom_int4_split": d.get("int4_split"),
    }
    gb = 1e9
    lines = [
        f"gpu-check: {hf['gpu']}, DiffusionGemma 26B dimensions, {LAYERS} layers (5 sliding + 1 full), bf16 unless int4",
        "| what | Darkroom | transformers | goal |",
        "|---|---|---|---|",
    ]
    for name, r, goal in rows:
        lines.append(f"| {name} | {r['argmax_agree']:.4f} / {r['max_rel_diff']:.4f} / {r['mean_kl']:.2e} | (reference) | {goal} |")
    d, t = res["darkroom_bf16"], res["transformers_bf16"]
    lines += [
        f"| 256-token canvas, {STEPS} steps (ms) | {d['canvas_ms']:.1f} (int4 {res['darkroom_int4']['canvas_ms']:.1f}) | {t['canvas_ms']:.1f} | |",
        f"| diffusion tokens/s | {d['diffusion_tokens_s']:.0f} (int4 {res['darkroom_int4']['diffusion_tokens_s']:.0f}) | {t['diffusion_tokens_s']:.0f} | Darkroom ≥ 1.5× transformers: {res['darkroom_vs_transformers_diffusion']:.2f}× |",
        f"| AR tokens/s | {d['ar_tokens_s']:.0f} (int4 {res['darkroom_int4']['ar_tokens_s']:.0f}) | {t['ar_tokens_s']:.0f} | diffusion ≥ 3× AR: {res['darkroom_diffusion_vs_ar_bf16']:.2f}× |",
        f"| device memory (GB) | {d['device_memory_bytes'] / gb:.1f} (int4 {res['darkroom_int4']['device_memory_bytes'] / gb:.1f}) | {t['max_memory_bytes'] / gb:.1f} (torch allocated) | |",
        f"| 30 layers int4, extrapolated: memory (GB) / canvas (ms, upper bound) | {mem30_int4 / gb:.1f} / {canvas30_int4_ms:.0f} | | ≤ 18 / ≤ 150 |",
    ]
    if line := split_line(d):
        lines.append(line)
    print("\n".join(lines))
    res["table"] = lines
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "probe":
        sys.exit(probe())
    if cmd == "build" and len(sys.argv) == 3:
        sys.exit(build(sys.argv[2]))
    if cmd == "report" and len(sys.argv) == 4:
        sys.exit(report(sys.argv[2], sys.argv[3]))
    if cmd == "ids" and len(sys.argv) == 3:
        sys.exit(ids(sys.argv[2]))
    if cmd == "rehearsal" and len(sys.argv) == 4:
        sys.exit(rehearsal(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
