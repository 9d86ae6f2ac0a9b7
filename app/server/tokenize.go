package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/darkroomlabs/darkroom/app/api"
	"github.com/darkroomlabs/darkroom/engine"
	"github.com/darkroomlabs/darkroom/engine/chat"
	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/tokenizer"
)

// The model's tokenizer over HTTP, at the server's root as vLLM has it (and
// llama.cpp's server, whose "content" field is read and written too): GET
// /tokenizer_info (the special tokens' texts and the context length), POST
// /tokenize ({"prompt": text, "add_special_tokens": true} → {"tokens",
// "count", "max_model_len"}; special tokens written in the text are read as
// such, and add_special_tokens, true unless false, puts the BOS first, as
// Hugging Face's tokenizer does; or {"messages": a chat} → the prompt POST
// /v1/chat/completions would send for it) and POST /detokenize ({"tokens": ids} →
// {"prompt": text}). An evaluation harness that finds them (lm-eval's
// local-completions: /tokenizer_info and /tokenize) tokenizes with the
// server's model, with no copy of its tokenizer. They take the API key as
// /v1 does, and answer errors in its shape. A model without a tokenizer here
// (a remote server's) answers 501.

// apiPath reports whether path is the API's (the API key in a header, errors
// as JSON, web pages the user allowed): /v1/… and the tokenizer's endpoints
// (apiMethod's).
func apiPath(path string) bool {
	return strings.HasPrefix(path, "/v1/") || apiMethod(path) != ""
}

// tokenized is implemented by *engine.Engine.
type tokenized interface {
	Tokenizer() *tokenizer.Tokenizer
	Config() *config.Model
}

// tokenizerOr returns the model and its tokenizer and configuration, or
// answers why there is none.
func (s *Server) tokenizerOr(w http.ResponseWriter, r *http.Request) (Model, *tokenizer.Tokenizer, *config.Model, bool) {
	m, ok := s.apiModelOr(w, r)
	if !ok {
		return m, nil, nil, false
	}
	e, ok := m.Engine.(tokenized)
	if !ok || e.Tokenizer() == nil {
		apiError(w, http.StatusNotImplemented, "invalid_request_error", "no_tokenizer",
			fmt.Sprintf("the model %q has no tokenizer on this server (a remote model's is on its own server)", m.ID))
		return m, nil, nil, false
	}
	return m, e.Tokenizer(), e.Config(), true
}

func (s *Server) handleTokenizerInfo(w http.ResponseWriter, r *http.Request) {
	_, tok, cfg, ok := s.tokenizerOr(w, r)
	if !ok {
		return
	}
	text := func(id int) *string {
		if t, ok := tok.Token(id); ok && id >= 0 {
			return &t
		}
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"eos_token": text(tok.EOS()), "bos_token": text(tok.BOS()), "pad_token": text(tok.Pad()),
		"model_max_length": cfg.Text.MaxPositionEmbeddings, "vocab_size": tok.VocabSize(),
	})
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt   *string       `json:"prompt"`
		Content  *string       `json:"content"` // llama.cpp's name for it
		Messages []api.Message `json:"messages"`
		// With messages: tools declared, and thinking asked, as the chat endpoint reads them.
		Tools              []api.Tool                 `json:"tools"`
		ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
		ReasoningEffort    *string                    `json:"reasoning_effort"`
		AddSpecialTokens   *bool                      `json:"add_special_tokens"`
	}
	if !decodeRequest(w, r, &req) {
		return
	}
	m, tok, cfg, ok := s.tokenizerOr(w, r)
	if !ok {
		return
	}
	text := req.Prompt
	if text == nil {
		text = req.Content
	}
	var ids []int
	switch {
	case req.Messages != nil:
		// A chat, as POST /v1/chat/completions reads it (the model's own
		// system turn where it has none): the prompt it would send.
		msgs, err := chatMessages(req.Messages, m.System)
		cr := api.ChatRequest{Tools: req.Tools, ChatTemplateKwargs: req.ChatTemplateKwargs, ReasoningEffort: req.ReasoningEffort}
		var er engine.Request
		if err == nil {
			_, err = toolUse(&cr, &er)
		}
		if err == nil {
			er.Thinking, err = thinkingAsked(&cr, m)
		}
		if err == nil {
			if ids, err = chat.Encode(tok, msgs, chat.Options{Tools: er.Tools, Thinking: er.Thinking}); err != nil {
				err = &badRequest{"messages", err.Error()}
			}
		}
		if err != nil {
			answerBadRequest(w, err)
			return
		}
	case text != nil:
		ids = tok.Encode(*text)
		if (req.AddSpecialTokens == nil || *req.AddSpecialTokens) && tok.BOS() >= 0 {
			ids = append([]int{tok.BOS()}, ids...)
		}
	default:
		apiErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "prompt",
			`prompt must be the text to tokenize, e.g. {"prompt": "Unix is"} (or "messages", a chat)`)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": cfg.Text.MaxPositionEmbeddings})
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int `json:"tokens"`
	}
	if !decodeRequest(w, r, &req) {
		return
	}
	_, tok, _, ok := s.tokenizerOr(w, r)
	if !ok {
		return
	}
	if err := checkTokens(req.Tokens, tok.VocabSize()); err != nil {
		apiErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "tokens", err.Error())
		return
	}
	text := tok.Decode(req.Tokens)
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text, "content": text})
}

// checkTokens says what is wrong with ids for a vocabulary of vocab, or nil.
func checkTokens(ids []int, vocab int) error {
	if ids == nil {
		return errors.New(`tokens must be the token ids to turn into text, e.g. {"tokens": [2, 818]}`)
	}
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return fmt.Errorf("tokens[%d] is %d, outside the vocabulary of %d", i, id, vocab)
		}
	}
	return nil
}
