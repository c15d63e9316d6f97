package chat

import (
	"testing"
)

// Any template source compiles or is refused, and any compiled template renders or fails
// with an error, never a panic or a render past its bounds; any message text renders through
// a stock template. CI's long tier runs each briefly (-fuzz); without -fuzz the seeds run.

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{Default, `{% for m in messages %}{{ m.role }}: {{ m.content | trim }}{% endfor %}`,
		`{% set x = namespace(n=0) %}{% for m in messages %}{% set x.n = x.n + 1 %}{% endfor %}{{ x.n }}`,
		`{{ messages[0]['content'][::-1] | upper }}{% if add_generation_prompt %}>{% endif %}`,
		`{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, `{{ tools | tojson(indent=2) }}`} {
		f.Add(s, "hello {{ not a template }}")
	}
	f.Fuzz(func(t *testing.T, source, content string) {
		if len(source) > 2048 || len(content) > 1024 {
			return
		}
		tpl, err := New(source, "fuzz", "<s>", "</s>", false)
		if err != nil {
			return
		}
		tpl.Render(Input{Messages: []Message{{Role: "user", Content: content}, {Role: "assistant", Content: content}},
			AddGenerationPrompt: true})
	})
}
