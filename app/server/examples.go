package server

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Examples are a chat completion against this server written as a demo
// builder starts one, to copy from the desktop app's Settings: a curl command
// and a JavaScript fetch, each with the API base and key of the running server
// and a question, no model named (the server answers with the active one).
// TestExamplesRun runs both, with the real curl and node.
func Examples(base, key string) (curl, js string) {
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": exampleQuestion}}})
	url := strings.TrimRight(base, "/") + "/chat/completions"
	curl = fmt.Sprintf("curl %s \\\n  -H 'Authorization: Bearer %s' \\\n  -H 'Content-Type: application/json' \\\n  -d '%s'\n",
		url, key, body)
	js = fmt.Sprintf(`const response = await fetch(%q, {
  method: "POST",
  headers: { "Authorization": "Bearer %s", "Content-Type": "application/json" },
  body: JSON.stringify(%s),
});
const answer = await response.json();
console.log(answer.choices[0].message.content);
`, url, key, body)
	return curl, js
}

// exampleQuestion is what Examples ask.
const exampleQuestion = "What is Unix?"
