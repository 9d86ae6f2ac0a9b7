package engine

import (
	"time"

	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/sampler"
)

// Mode selects how new tokens are produced from the same weights.
type Mode string

const (
	// Diffusion develops a 256-token canvas from noise in parallel denoising steps.
	Diffusion Mode = "diffusion"
	// AR decodes one token per forward pass with the causal KV cache (the "printer").
	AR Mode = "ar"
)

// Sampling holds the sampler's knobs. Zero values mean "the model's default from
// generation_config.json".
type Sampling struct {
	MaxNewTokens        int
	MaxSteps            int     // max denoising steps per canvas
	TMin, TMax          float64 // temperature schedule, t_max at the first step → t_min at the last
	EntropyBound        float64
	ConfidenceThreshold float64
	StabilityThreshold  int
	Temperature         float64 // AR mode only; 0 = greedy

	// RepetitionPenalty is Hugging Face's repetition_penalty θ, AR mode only: before
	// each pick, the logit of every id already in the sequence (prompt, opening and
	// the tokens so far) is divided by θ where positive and multiplied by θ where
	// negative (sampler.Penalize), so θ > 1 keeps the printer from looping. Zero
	// means the model's default; 1 is off. Diffusion and its AR guidance ignore it.
	RepetitionPenalty float64

	// Guidance is the weight λ of the causal (AR) head when a developed canvas's
	// words are revised (sampler.Guide): each position moves to the argmax of
	// log p_decoder + λ·log p_AR, markup and end tokens left where the decoder put
	// them. GuidanceRounds bounds the rounds per canvas (one encoder pass each).
	// Diffusion only. Zero means the model's default; negative turns guidance off.
	// GuidanceInWord is the causal head's weight at positions inside a word, where
	// the choice is spelling (sampler.Guide.InWords); zero means the model's
	// default, negative means Guidance there too.
	Guidance       float64
	GuidanceRounds int
	GuidanceInWord float64

	// NoStutters, AR mode: above zero the printer never writes a word twice side
	// by side, spaces between aside (sampler.Sampler.NoStutters: "always always
	// always" from a small model stuck in a loop). Zero means the model's default
	// (generation_config.json's darkroom_ar_no_stutters); negative is off.
	// Diffusion's AR guidance keeps the rule whatever this says.
	NoStutters int

	// FrequencyPenalty is OpenAI's frequency_penalty α, AR mode only: before
	// each pick, the logit of every id picked so far (not the prompt's nor a
	// held opening's) is lowered by α times its count (sampler.Sampler.Picked),
	// after the repetition penalty. Zero means the model's default
	// (generation_config.json's darkroom_ar_frequency_penalty); negative is
	// off. Diffusion and its AR guidance ignore it.
	FrequencyPenalty float64
	// PresencePenalty is OpenAI's presence_penalty β, AR mode only: before each
	// pick, the logit of every id picked at least once so far is lowered by β,
	// beside the frequency penalty's α·count (OpenAI's formula). Zero is off (no
	// model sets one). Diffusion and its AR guidance ignore it.
	PresencePenalty float64
	// LogitBias is OpenAI's logit_bias, AR mode only: added to the logits of
	// its ids before every pick (−100 keeps an id out in effect). Diffusion
	// ignores it.
	LogitBias map[int]float64

	// TopK and TopP truncate the AR mode's draws (at a temperature above 0),
	// Hugging Face's top_k and top_p after the temperature: the k likeliest
	// ids, then the fewest of those whose probability reaches p. 0 is off (and
	// TopP 1). Where the device picks tokens, a truncated draw's logits come to
	// the host. Diffusion ignores them, as Hugging Face's DiffusionGemma does.
	TopK int
	TopP float64
}

// Message is one chat message: role "system", "user", "model" or "tool", its
// text and a model message's tool calls (the chat template's own type, so that
// a conversation reaches it as given).
type Message = chat.Message

// Tool is a function the model may call (the chat template's own type): a
// request's Tools are declared in the prompt's system turn, and the calls the
// model writes are read from the answer's text with chat.ParseToolCalls.
type Tool = chat.Tool

// Request is one generation.
type Request struct {
	// Exactly one of Messages, Prompt and PromptIDs is used, in that order of preference.
	Messages  []Message // formatted with the chat template
	Prompt    string    // formatted as a single user turn, unless Raw
	Raw       bool      // Prompt is tokenized as is (a BOS is prepended), no chat template
	PromptIDs []int     // fed exactly as given, nothing added
	Thinking  bool      // enable the model's thinking channel where it has one
	Tools     []Tool    // functions the model may call, declared with Messages or Prompt

	Mode      Mode
	Sampling  Sampling
	Seed      uint64 // the same seed reproduces a run exactly
	CanvasIDs []int  // warm start: initial tokens of the first canvas (edit in place)

	// Opening is the start of the answer, fixed in advance (the Encyclopedia's
	// "<h1>Title</h1>\n"): its tokens open the answer in both modes. Diffusion
	// holds them at the head of the first canvas — the sampler never re-noises
	// or changes them — and develops the rest around them (infill); an opening
	// longer than a canvas fills the canvases it covers (committed as they are,
	// nothing to develop) and is held at the head of the next. AR feeds them as
	// the first answer tokens. Result.Tokens and Text begin with them. It is
	// tokenized with no BOS, control tokens spelled in it read as such (a tool
	// call's opening begins with <|tool_call>), and must fit in max new tokens.
	Opening string
	// OpeningExtra puts the Opening's tokens on top of max new tokens instead
	// of within them: the Opening is an answer written so far, to go on from
	// (Chat's Continue, after an answer that ran out of new tokens), and max
	// new tokens is what may follow it. An opening longer than a canvas fills
	// the canvases it covers, as any does.
	OpeningExtra bool
	// Lead is held after Opening where both fit (an entry's text, from
	// the model folder's leads: the Encyclopedia and Chat send it). Where Opening
	// and Lead together do not fit in max new tokens — a small max new tokens —
	// Lead is dropped whole, Opening alone is held, and Result.LeadHeld says so:
	// a lead is optional, an opening is not.
	Lead string
	// LeadEnds makes a held Lead the end of the answer: the entry's page or
	// chat answer as the model was trained to write it (assets.Leads), which
	// ends there — Result.StopReason StopEOS, and no forward pass. Left to
	// write past it, Darkroom Mini's printer added a sentence of its own to
	// most chat answers ("… originally so he could play games on his
	// scavenged PDP-7. It was developed at MIT's IBM 701 …"). Where the Lead
	// is not held (it does not fit; a tentative Opening) the model writes the
	// answer as without it. The Race sends a first sentence without it, to be
	// continued.
	LeadEnds bool
	// OpeningTentative holds Opening (and Lead) only where the model would begin
	// the answer with Opening itself — its first token's text is Opening's start
	// (the pieces may differ) — that token being, in AR mode, its own pick after
	// the prompt (at the request's temperature and penalties), in diffusion the
	// causal head's most likely token after the prompt. Otherwise the answer is
	// written as if neither had been sent (Result.HeldTokens is 0). Chat's
	// heading names the term asked about where the model writes a heading, and
	// does not force a definition on a message it answers otherwise ("What is
	// the capital of France?", which the Mini sends to the Library).
	OpeningTentative bool
	// Reply is a whole answer the model was trained to give word for word (the
	// Mini's Library answer to a message it is not for, assets.ChatElsewhere).
	// Where the model begins its answer with Reply's start — its own first
	// token, tested as a tentative opening's, after that opening — Reply is the
	// answer, held whole (Result.Replied). Left to write it, the Mini's printer
	// let the topic's words, and the repetition penalty on the system turn's,
	// pull it apart ("I am Darkroom Mallmour to theft**: …"). Not with a held
	// (not tentative) Opening, nor one longer than max new tokens.
	Reply string

	// FitContext lets a conversation longer than the model's context go on:
	// where Messages and max new tokens do not fit, the earliest turns after
	// the system turn are left out, whole — the part read begins with a user
	// message — as few as make it fit, the last user message always read
	// (Result.Dropped says how many). Where that message alone does not fit it
	// is a *ContextError still. Chat sends it, as ChatGPT and LM Studio let a
	// long chat go on; the API does not (its clients keep their own window,
	// and OpenAI's API refuses what does not fit).
	FitContext bool

	// NoPromptCache reads the whole prompt, from an empty cache, and keeps
	// nothing for the next request: what the prompt costs without the prompt
	// cache (`darkroom bench --prompt-cache=false`). The kept prompts are left
	// as they were for the requests after it.
	NoPromptCache bool

	// Logprobs asks for each answer token's log probability under the model,
	// its distribution at that position before temperature and penalties
	// (Result.Logprobs, and each EventToken's Logprob), as the API's logprobs
	// report them: AR mode only, where each token is the model's pick, and so
	// with no Opening, Lead or Reply held. TopLogprobs (0 to MaxTopLogprobs)
	// adds the most likely tokens at each position. Where the device picks
	// tokens in the graph, each pass then brings its logits to the host.
	Logprobs    bool
	TopLogprobs int
	// PromptLogprobs, with Logprobs, also reports each prompt token's log
	// probability given the tokens before it (Result.Prompt and
	// PromptLogprobs; the API's echo with logprobs, which evaluation harnesses
	// score answers by). The prompt is read a canvas of tokens at a time, each
	// piece scored before it is cached: about twice the reading, and no
	// earlier prompt's cache is read or kept.
	PromptLogprobs bool

	// JSON holds the answer to one JSON object (the API's response_format
	// json_object): each AR pick may take only an id whose text keeps the
	// answer the beginning of one (sampler.JSONObject), and the answer ends
	// where the object closes (StopEOS). AR mode only, with no Opening, Lead or
	// Reply (prose the object could not begin with). With Thinking the model
	// may think first, unheld; the object is held from the thought's end. Max
	// new tokens can still cut it short (StopMaxTokens).
	JSON bool
	// JSONSchema holds the JSON answer to an instance of a schema as well
	// (the API's response_format json_schema; sampler.CompileSchema): each
	// value of a kind the schema allows, an object's keys its properties, each
	// once, the required ones before it closes, enums as written. With JSON.
	JSONSchema *sampler.Schema
	// ToolCalls holds the tool calls of an AR answer to Tools (nil: the model
	// writes them unheld): each call names a declared tool, and its arguments,
	// written the chat template's way, are an instance of the tool's schema
	// (sampler.ToolCalls); the answer ends where a Single call does (StopEOS).
	// AR mode only, with Tools and without JSON, Lead or Reply; an Opening
	// must begin what the hold allows (words, or a call's beginning).
	ToolCalls *CallHold

	// OnEvent, if set, is called synchronously from the generating goroutine for
	// every denoising step, committed canvas and AR token. It must not block for long.
	OnEvent func(Event)
}

// CallHold is how Request.ToolCalls holds an answer's calls.
type CallHold struct {
	// Only: the answer is calls, no words before them (the API's tool_choice
	// "required" or a named function); with Thinking a thought may come first.
	Only bool
	// Single: at most one call (the API's parallel_tool_calls false).
	Single bool
	// Function is the one tool the calls may name (the API's named
	// tool_choice); "": any of the Tools.
	Function string
	// Schemas holds each tool's arguments, by its name, to its parameters
	// (sampler.CompileSchema); a tool without one takes any object.
	Schemas map[string]*sampler.Schema
}

// EventKind tells what an Event reports.
type EventKind int

const (
	EventStep   EventKind = iota // one denoising step of the current canvas
	EventCommit                  // a canvas was committed (argmax, EOS-truncated)
	EventToken                   // AR mode: one new token
	EventDone                    // generation finished (Result is final)
	// EventPrepare: the step about to run first prepares the model for this
	// device — builds and compiles a graph (the graph path, XLA's: a shape not
	// run before, as every one is in the first generation), seconds to a
	// minute for a big model. Once per generation at most, before the event
	// of the step it delays; the host path never sends it.
	EventPrepare
	// EventPrompt: the prompt is being read (encoded), a piece at a time, when it
	// is longer than one piece (PromptPiece tokens to encode): PromptRead of
	// PromptTokens read so far — what a long conversation or a pasted file waits
	// on before the first token, a minute or more for a big model on a CPU. The
	// context is checked between pieces.
	EventPrompt
)

// PromptPiece is how many tokens of a prompt the engine encodes between
// EventPrompt events and cancellation checks: one of the host encoder's passes of
// four chunks of 256 (model.HostPassTokens), so that the pieces are its very chunks
// and passes and change no value.
const PromptPiece = model.HostPassTokens

// Event reports progress of a generation; the UI draws the page developing from it.
type Event struct {
	Kind   EventKind
	Canvas int // 0-based canvas index
	Step   int // 1-based step within the canvas (EventStep)

	// Draft is the canvas after this step (EventStep: accepted tokens kept, the rest
	// re-noised) and Accepted marks positions accepted this step. Argmax is the
	// current argmax canvas (what would be committed now). Entropy is per position.
	Draft    []int
	Accepted []bool
	Argmax   []int
	Entropy  []float32

	// Guidance marks an AR guidance round after a canvas's denoising steps
	// (Sampling.Guidance): Draft and Argmax are the revised canvas, Accepted marks
	// the positions the round changed, Entropy is nil.
	Guidance bool
	Round    int // the guidance round of a Guidance event, 1-based (Step is then the canvas's steps + Round)

	// Steps is the denoising steps of the generation so far, every canvas's
	// (EventStep; guidance rounds are not steps).
	Steps int

	Committed []int  // all tokens committed so far (EOS-truncated), all kinds
	Text      string // decoded Committed (EventCommit, EventToken, EventDone); for EventStep the decoded Argmax draft appended
	// Logprob is the new token's log probability (EventToken, where the
	// request asks for Logprobs).
	Logprob *TokenLogprob

	ForwardPasses int           // decoder+encoder forward passes so far
	Elapsed       time.Duration // since the start of the generation

	// PromptRead of PromptTokens: how much of the prompt is read (EventPrompt),
	// the part an earlier prompt left in the cache counted as read.
	PromptRead, PromptTokens int
}

// CanvasStats describes how one canvas developed.
type CanvasStats struct {
	Steps    int   `json:"steps"`
	Accepted []int `json:"accepted"` // accepted count per step

	GuidanceRounds int `json:"guidance_rounds,omitempty"` // AR guidance rounds run after the steps
	Guided         int `json:"guided,omitempty"`          // positions they changed, in all
}

// Result is a finished generation.
type Result struct {
	Text          string        `json:"text"`
	Tokens        []int         `json:"tokens"`   // the Opening's ids then the generated ids, up to and excluding EOS
	Canvases      []CanvasStats `json:"canvases"` // one per canvas developed (not one the opening filled)
	ForwardPasses int           `json:"forward_passes"`
	PromptTokens  int           `json:"prompt_tokens"`
	// PromptCached is how many of the prompt's first tokens an earlier generation had
	// left in the KV cache, so that this one encoded only the rest (a conversation's
	// next message re-reads the conversation so far; the host path only).
	PromptCached  int           `json:"prompt_cached_tokens,omitempty"`
	Elapsed       time.Duration `json:"-"`
	ElapsedMS     float64       `json:"elapsed_ms"`
	TokensPerS    float64       `json:"tokens_per_s"`          // generated tokens (the Opening not counted) per second
	FirstCanvasMS float64       `json:"first_canvas_ms"`       // time to the first committed canvas (or AR token)
	ForwardMS     float64       `json:"forward_ms"`            // time inside model forward passes (the rest is sampling and bookkeeping)
	ForwardFLOPs  float64       `json:"forward_flops"`         // model arithmetic of those passes (engine/model's count of useful FLOPs)
	StopReason    string        `json:"stop_reason"`           // StopEOS, StopMaxTokens or StopCancelled
	LeadHeld      bool          `json:"lead_held,omitempty"`   // Request.Lead was held after the Opening (Tokens and Text begin with both)
	HeldTokens    int           `json:"held_tokens,omitempty"` // how many of Tokens were held (the Opening's and, where held, the Lead's; or the Reply's), not written
	Replied       bool          `json:"replied,omitempty"`     // the model began Request.Reply, held whole as the answer
	Dropped       int           `json:"dropped,omitempty"`     // Request.FitContext: how many of the Messages after the system turn were left out, the earliest
	// Logprobs holds each of Tokens' log probability, in order, where the
	// request asks for them (Request.Logprobs).
	Logprobs []TokenLogprob `json:"logprobs,omitempty"`
	// Prompt is the ids the model read (BOS included where the engine put one
	// before the prompt's text) and PromptLogprobs the log probability of
	// each after the first (Request.PromptLogprobs).
	Prompt         []int          `json:"prompt,omitempty"`
	PromptLogprobs []TokenLogprob `json:"prompt_logprobs,omitempty"`
}

// MaxTopLogprobs is the most alternatives Request.TopLogprobs may ask for at
// each position (OpenAI's chat API's limit, vLLM's default one).
const MaxTopLogprobs = 20

// TokenLogprob is one answer token's log probability under the model (natural
// log, its distribution before temperature and penalties) and, where asked
// for, the most likely tokens at its position, most likely first.
type TokenLogprob struct {
	ID      int          `json:"id"`
	Logprob float32      `json:"logprob"`
	Top     []TopLogprob `json:"top,omitempty"`
}

// TopLogprob is one of the most likely tokens at a position.
type TopLogprob struct {
	ID      int     `json:"id"`
	Logprob float32 `json:"logprob"`
}

// Why a generation stopped (Result.StopReason; also its JSON): the engine
// decides it, and every screen, the server and the remote client read it by these
// names.
const (
	StopEOS       = "eos"        // the model wrote an id a generation ends at (see Engine.IsEnd)
	StopMaxTokens = "max_tokens" // the request's max new tokens were written
	StopCancelled = "cancelled"  // the request's context ended; the result is what was committed
)
