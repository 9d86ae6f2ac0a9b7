// Package engine runs DiffusionGemma-architecture block-diffusion language models
// on GoMLX: it loads a checkpoint, turns a request into tokens and develops the
// answer canvas by canvas.
//
// One backbone, two modes. A DiffusionGemma checkpoint has a single stack of
// transformer layers (sliding and full attention, a routed mixture of experts next
// to a dense MLP in every layer) that runs in two ways:
//
//   - as a causal encoder, over the prompt and then over every committed canvas,
//     writing each token's keys and values to the KV cache — the same pass an
//     ordinary autoregressive LM makes, which is also how AR mode decodes one token
//     per forward pass;
//   - as a bidirectional decoder over a fixed-length canvas (256 tokens for the
//     released model) that reads the cache and never writes it: every canvas
//     position sees the whole prefix and every other canvas position.
//
// The only decoder-only part is self-conditioning: at each denoising step the
// decoder also receives the previous step's tempered prediction, as a soft
// embedding softmax(logits/T)·E·√d, through a small MLP. Everything else — the
// embeddings, the attention and expert weights, the tied output head — is shared,
// and the encoder differs only in its own per-layer layer_scalar buffers.
//
// Generation (Engine.Generate) is block-autoregressive diffusion: encode the
// prompt, start a canvas of uniform random tokens (or the caller's warm start),
// and denoise it in up to max_denoising_steps steps. Each step the decoder scores
// every position, package sampler draws a token per position from the tempered
// distribution, keeps the lowest-entropy positions whose summed entropy stays
// under the entropy bound, re-noises the rest, and stops once the argmax canvas is
// stable and confident. The argmax canvas is committed, cut at the first EOS, and
// — unless generation ends there — encoded into the cache so the next canvas
// continues it. Every step is reported as an Event, so a UI can show the page
// developing, and cancellation through the context is honored between steps.
//
// A prompt that begins as a recent one did — a conversation's next message, which
// re-sends the conversation so far, or an answer regenerated — is encoded from that
// prompt's cache (prefixCache: the runner keeps copies of its cache after prompts of a
// chunk or more, two of them, so a page made between two messages does not cost the
// conversation its cache; on a GPU the copies are in host memory, not the device's),
// in whole chunks of the encoder, so the rest is encoded in the very chunks a pass
// over all of it would be and every value is the same bit for bit
// (Result.PromptCached counts what was read).
//
// AR guidance (Darkroom's, off unless generation_config.json or the request
// asks for it): the decoder guesses all positions at once, so a small model's
// words can come out assembled from pieces of different words. Before the commit,
// a few rounds revise the developed canvas with the model's own causal head: one
// encoder pass over the canvas without caching it (Runner.Score), then every text
// position moves to the argmax of log p_decoder + λ·log p_AR (sampler.Guide; tags,
// attributes and the end stay where the decoder put them). Where the decoder wrote
// a piece that continues a word, λ may be larger (Sampling.GuidanceInWord): that
// choice is spelling, which the causal head knows better, while the first piece
// of each word stays mostly the decoder's. The rounds are steps of the same canvas
// for the events and the stats (CanvasStats.GuidanceRounds).
//
// AR mode (Mode AR) picks one token per encoder pass, greedy unless a temperature
// is asked for, after Hugging Face's repetition penalty where the model's
// generation_config.json or the request sets one (Sampling.RepetitionPenalty):
// every id already in the sequence has its logit divided by θ when positive,
// multiplied by it when negative; then OpenAI's frequency penalty where one is
// set (Sampling.FrequencyPenalty: each id's logit lowered by α times the times
// the model has picked it), OpenAI's presence penalty (Sampling.PresencePenalty:
// once per id picked), OpenAI's logit bias (Sampling.LogitBias) and the
// stutter rule (Sampling.NoStutters), and draws,
// where a temperature is asked for, from the whole distribution or from its
// top-k and top-p (Sampling.TopK, TopP: the sampler truncates the draw).
// Diffusion and its guidance never read them. Where a request asks
// (Request.Logprobs), each pick comes with its log probability under the
// model's own distribution and the likeliest tokens there (Result.Logprobs,
// sampler.LogProbs): the pass's logits then come to the host even where the
// device picks tokens. JSON mode (Request.JSON) holds each pick to text that
// keeps the answer the beginning of one JSON object (sampler.JSONObject, whose
// bans the pick takes as the stutter rule's, on the device too) and ends the
// answer where the object closes; held tool calls (Request.ToolCalls) hold
// each pick of a call to the declared tools and their parameters
// (sampler.ToolCalls) the same way.
//
// Subpackages:
//
//   - config: config.json and generation_config.json, every dimension the engine uses;
//   - weights: the one table of the model's tensors (canonical, Hugging Face and GGUF
//     names, shapes, init rules) and loading and saving checkpoints by it;
//   - safetensors and gguf: the two file formats, read one tensor at a time (mapfile:
//     a model file mapped into memory, its tensors views of the page cache);
//   - quant: the int8, int4 and NVFP4 weight formats and the bf16/int8/int4 profiles;
//   - tokenizer and chat: text ↔ ids, and the Gemma 4 turn template;
//   - model: the GoMLX graphs, the host model (float32 activations, weights as
//     stored) and the KV cache (model/arch: the layer recipe both run, and the
//     trainer's tape, written once over a small set of operations; model/naive: the
//     float64 oracle the tests hold them to);
//   - kernels: the host compute kernels (GEMM and friends) the host model, training,
//     the sampler and the benchmarks share;
//   - sampler: the entropy-bound sampler, AR guidance and the AR pick (host and graph);
//   - markup: finding the debris of HTML tags in generated text;
//   - backend: choosing the GoMLX backend, with a plain fallback from XLA to pure Go;
//   - train: the trainer, Darkroom Mini's recipe and random checkpoints of any config
//     (train/hostgrad: the objective's gradient on the host; train/corpus: the corpus);
//   - atomicfile: files that are either old or new, never torn;
//   - enginetest: tiny real checkpoints for other packages' tests.
package engine
