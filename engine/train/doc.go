// Package train owns Darkroom's trainer for models of the DiffusionGemma
// architecture, and how Darkroom Mini (the built-in model) is trained, exported
// and evaluated.
//
// The objective is the one of the official recipes (Google's JAX SFT and
// NVIDIA's NeMo AutoModel recipe):
//
//   - per example one noise level t ~ U(ε, 1); every canvas position is replaced
//     by a uniform random token over the whole vocabulary with probability t;
//   - the clean prefix (the chat-formatted prompt, plus earlier canvases when the
//     answer spans several) and the clean canvas run through the causal encoder,
//     whose logits give the AR next-token loss (weight 1) over every valid pair;
//   - decoder pass 1 over the noisy canvas, reading the prefix K/V, without
//     gradient; its soft embedding softmax(logits)·E·√D is the self-conditioning
//     input of pass 2 on half the examples (zero on the others);
//   - decoder pass 2, with gradient: cross-entropy on EVERY canvas position
//     (corrupted or not, no 1/t weighting); answers are padded with EOS to the
//     canvas end, which teaches the model to stop.
//
// One addition of ours, off by default: Options.TitleWeight multiplies both
// terms on the answer tokens that repeat the prompt's title (Example.Copied), so
// that a small model gets enough signal to learn to copy the title into the
// page's <h1>. Another: a corpus record may train one term only (Record.Loss),
// which sequence-level distillation uses (Distill with Beside): the decoder
// learns the printer's rewritten pages, the encoder the pages as written.
// A trained model can also start a deeper one (Grow: progressive stacking, the
// added layers switched off until training fades them in), so the canvas budget
// buys depth without training from scratch.
//
// AdamW (β = 0.95, 0.99) with linear warm-up and cosine decay, gradient clipping
// by global norm, periodic held-out evaluation, and atomic checkpoints with an
// exact resume: data order and noise are pure functions of (seed, step), so a
// resumed run computes bit-identical steps. Batches have static shapes (prefix
// buckets with left padding and key-valid masks, canvas C), so each bucket
// compiles one graph.
//
// The model graph is engine/model's (the same code the engine runs), over
// trainable context variables in scope "dg" named by canonical weight names.
// vjp.go replaces three GoMLX v0.26 gradients that are missing, unusable on the
// pure-Go backend (Slice's uses Pad) or far too slow (DotGeneral's).
package train
