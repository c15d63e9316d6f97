package chat

import "github.com/wspec/wspec/weights/tokenizer"

// ForModel is the chat template a model is served with: override (a file or the template
// text: --chat-template) when given, else embedded (a GGUF file's tokenizer.chat_template)
// when it has one, else what Load finds beside the model at dir; with the special tokens of
// tok (BOS, the first end-of-sequence token), BOS left to the engine where tok adds it.
func ForModel(dir, embedded, override string, tok *tokenizer.Tokenizer) (*Template, error) {
	src, origin := embedded, "the GGUF file's tokenizer.chat_template"
	if override != "" || embedded == "" {
		var err error
		if src, origin, err = Load(dir, override); err != nil {
			return nil, err
		}
	}
	bos, eos := "", ""
	if id := tok.BOS(); id >= 0 {
		bos = tok.Piece(id)
	}
	if ids := tok.EOS(); len(ids) > 0 {
		eos = tok.Piece(ids[0])
	}
	return New(src, origin, bos, eos, tok.AddBOS())
}

// UserPrompt renders text as one user's message, ending where the assistant's reply begins:
// the prompt a chat request of that one message gets.
func (t *Template) UserPrompt(text string) (string, error) {
	return t.Render(Input{Messages: []Message{{Role: "user", Content: text}}, AddGenerationPrompt: true})
}
