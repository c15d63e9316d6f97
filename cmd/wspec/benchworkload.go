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
	"system": {name: "system", about: "one shared system prompt, then each user's line", turns: 1, tokens: 64,
		first: func(i int) string { return systemPrompt + chatFollowUps[i%len(chatFollowUps)] }},
	"agent": {name: "agent", about: "repetitive: a few tool outputs echoed across requests, each with a step number", turns: 1, tokens: 64,
		first: func(i int) string {
			return fmt.Sprintf("%sStep %d. %s", agentTools[i%len(agentTools)], 1+i/len(agentTools), "Then")
		}},
}

// workloadNames lists the workloads for the flag's help.
func workloadNames() string { return "stories, chat, users, system, agent" }

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
