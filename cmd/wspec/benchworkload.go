package main

import (
	"fmt"
	"strings"
)

// A workload of `wspec bench --serve` is sessions of turns: each session is one client's
// conversation, its turns sent one after another, each turn's prompt made from the previous
// turn's prompt and reply (a chat client resends the history). The sessions run on the
// concurrent clients in turn.
type workload struct {
	name  string
	about string
	turns int
	// first is session i's first prompt; next, when turns > 1, the prompt of a later turn
	// from the history so far (the prompts and replies).
	first func(i int) string
	next  func(i, turn int, history string) string
	// tokens is the default --tokens (a chat's history must fit the default model's 256).
	tokens int
}

// workloads are the --workload choices, for the default model (stories of a small
// vocabulary, a context of 256 tokens: histories stay short).
var workloads = map[string]workload{
	"stories": {name: "stories", about: "independent story openings of mixed lengths", turns: 1, tokens: 64,
		first: func(i int) string { return benchPrompts[i%len(benchPrompts)] }},
	"chat": {name: "chat", about: "multi-turn: each turn resends the history and adds a line", turns: 3, tokens: 32,
		first: func(i int) string { return chatOpenings[i%len(chatOpenings)] },
		next: func(i, turn int, history string) string {
			return history + "\n" + chatFollowUps[(i+turn)%len(chatFollowUps)]
		}},
	"users": {name: "users", about: "multi-turn chats of distinct users: each session opens with its own line, then resends the history", turns: 3, tokens: 32,
		first: func(i int) string {
			return fmt.Sprintf("Chat %d with user %d. %s", i, 1000+7*i, chatOpenings[i%len(chatOpenings)])
		},
		next: func(i, turn int, history string) string {
			return history + "\n" + chatFollowUps[(i+turn)%len(chatFollowUps)]
		}},
	"history": {name: "history", about: "multi-turn chats whose history outweighs each turn, as real chats' do: each user's session opens with a passage of its own (about 120 tokens), then resends the history and adds a line", turns: 3, tokens: 24,
		first: func(i int) string { return userPassage(i) },
		next: func(i, turn int, history string) string {
			return history + "\n" + chatFollowUps[(i+turn)%len(chatFollowUps)]
		}},
	"system": {name: "system", about: "one shared system prompt, then each user's line", turns: 1, tokens: 64,
		first: func(i int) string { return systemPrompt + chatFollowUps[i%len(chatFollowUps)] }},
	"agent": {name: "agent", about: "repetitive: a few tool outputs echoed across requests, each with a step number", turns: 1, tokens: 64,
		first: func(i int) string {
			return fmt.Sprintf("%sStep %d. %s", agentTools[i%len(agentTools)], 1+i/len(agentTools), "Then")
		}},
}

// workloadNames lists the workloads for the flag's help.
func workloadNames() string { return "stories, chat, users, history, system, agent" }

// passageLines are the sentences a user's passage is drawn from.
var passageLines = []string{
	"Lily had a small garden behind her house with red flowers and a tall green tree.",
	"Every morning she gave the flowers water from a blue can and sang a happy song.",
	"Her dog Max liked to dig holes near the fence and hide his bones in the dirt.",
	"One day a little bird came to sit on the tree and watched Lily work.",
	"Tom lived next door and he often came over to play ball in the grass.",
	"Their mom made cookies and milk for them when they came in from the sun.",
	"At night the stars were bright and the moon looked like a big white ball.",
	"Grandpa told them stories about a brave knight and a kind old dragon.",
	"The children wanted to build a house for the bird out of sticks and string.",
	"When it rained they stayed inside and drew pictures of cats, boats and trees.",
}

// userPassage is session i's opening: its own ordering of eight of the passage lines after a
// line naming the user, so no two sessions share a prefix past their first few words.
func userPassage(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Chat %d with user %d.", i, 1000+7*i)
	for k := range 8 {
		b.WriteString(" ")
		b.WriteString(passageLines[(i*3+k*7)%len(passageLines)])
	}
	return b.String()
}

var chatOpenings = []string{
	"Once upon a time, there was a little girl named Lily.",
	"Tom had a red ball. He liked to play with it in the park.",
	"One day, a cat and a dog went for a walk.",
	"Sue wanted to bake a cake for her mom.",
}

var chatFollowUps = []string{
	"Then something surprising happened.",
	"The next day, they went to the park.",
	"Her friend came to help her.",
	"But there was a problem.",
}

// systemPrompt is about 150 tokens every request of the system workload starts with.
var systemPrompt = strings.Repeat("This is a story for children. It is happy and kind, with simple words, a friend, a lesson and a good ending. ", 5)

// agentTools are what an agent's requests keep echoing: the same tool outputs again and again.
var agentTools = []string{
	"Tool output: the box has a red ball, a blue car and a toy dog. The dog is happy. The car is fast. ",
	"Tool output: Lily went to the park. She saw a big tree, a bird and a cat. The cat was sleeping. ",
	"Tool output: Tom made a cake with eggs, milk and sugar. His mom said the cake was very good. ",
}
