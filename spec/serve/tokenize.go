package serve

import (
	"encoding/json"
	"net/http"
)

// POST /tokenize and /detokenize, as vLLM serves them: a prompt's token ids (and, when asked,
// their pieces) with the model's context length; ids back to text. With messages instead of a
// prompt, the chat is rendered through the chat template as a chat request would be, and its
// prompt's tokens are the answer.

type tokenizeRequest struct {
	Model            string  `json:"model"`
	Prompt           *string `json:"prompt"`
	AddSpecialTokens *bool   `json:"add_special_tokens"` // the tokenizer's BOS (default true)
	ReturnTokenStrs  bool    `json:"return_token_strs"`
	// vLLM's chat form: the messages and the template's inputs
	Messages             json.RawMessage `json:"messages"`
	AddGenerationPrompt  json.RawMessage `json:"add_generation_prompt"`
	ContinueFinalMessage json.RawMessage `json:"continue_final_message"`
	Tools                json.RawMessage `json:"tools"`
	ChatTemplateKwargs   json.RawMessage `json:"chat_template_kwargs"`
}

type tokenizeReply struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs,omitempty"`
}

type detokenizeRequest struct {
	Model  string `json:"model"`
	Tokens []*int `json:"tokens"` // pointers: a null is refused, not read as token 0
}

type detokenizeReply struct {
	Prompt string `json:"prompt"`
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	switch {
	case req.Model != "" && req.Model != s.name:
		writeError(w, modelNotFound(req.Model, s.name))
		return
	case req.Prompt != nil && len(req.Messages) > 0:
		writeError(w, invalid("messages", codeInvalidValue, "give prompt or messages, not both"))
		return
	case req.Prompt == nil && len(req.Messages) == 0:
		writeError(w, invalid("prompt", codeMissing, "prompt (or messages): required"))
		return
	}
	var ids []int
	if req.Prompt != nil {
		bos := s.tok.AddBOS() && (req.AddSpecialTokens == nil || *req.AddSpecialTokens)
		ids = s.tok.Encode(*req.Prompt, bos)
	} else {
		body := map[string]any{"messages": req.Messages, "max_completion_tokens": 1, "tool_choice": "none"}
		for k, v := range map[string]json.RawMessage{"add_generation_prompt": req.AddGenerationPrompt,
			"continue_final_message": req.ContinueFinalMessage, "tools": req.Tools, "chat_template_kwargs": req.ChatTemplateKwargs} {
			if len(v) > 0 {
				body[k] = v
			}
		}
		b, _ := json.Marshal(body)
		rq, err := s.chatFromBody(r.Context(), b)
		if err != nil {
			writeError(w, err)
			return
		}
		ids = rq.prompts[0].Prompt
	}
	rep := tokenizeReply{Count: len(ids), MaxModelLen: s.maxSeq, Tokens: ids}
	if req.ReturnTokenStrs {
		for _, id := range ids {
			rep.TokenStrs = append(rep.TokenStrs, s.tok.Piece(id))
		}
	}
	writeJSON(w, rep)
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Model != "" && req.Model != s.name {
		writeError(w, modelNotFound(req.Model, s.name))
		return
	}
	ids := make([]int, len(req.Tokens))
	for i, id := range req.Tokens {
		if id == nil {
			writeError(w, invalid("tokens", codeInvalidValue, "tokens[%d]: null is not a token id", i))
			return
		}
		if *id < 0 || *id >= s.tok.VocabSize() {
			writeError(w, invalid("tokens", codeInvalidValue, "tokens: %d is not a token id of the vocabulary (0..%d)", *id, s.tok.VocabSize()-1))
			return
		}
		ids[i] = *id
	}
	writeJSON(w, detokenizeReply{Prompt: s.tok.Decode(ids)})
}
