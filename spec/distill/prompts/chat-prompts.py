# Writes chat-train.txt and chat-eval.txt beside this file: instruction prompts for
# distilling drafters of chat models (spec/distill/recipe-smollm2.sh), templates x topics, the
# evaluation set from 8 topics kept out of training. Deterministic (seeded).
import os
import random
templates = [
 "Explain {t} to a beginner in a short paragraph.",
 "Give three facts about {t}.",
 "Write a short poem about {t}.",
 "What are the pros and cons of {t}?",
 "Summarize the history of {t} in a few sentences.",
 "Write a tweet about {t}.",
 "List five questions a student might ask about {t}, with short answers.",
 "How would you explain {t} to a ten-year-old?",
 "Write a short story that involves {t}.",
 "What is a common misconception about {t}?",
 "Give me a step-by-step guide to getting started with {t}.",
 "Compare {t} with something similar and explain the differences.",
 "Write an email to a friend recommending {t}.",
 "What are the most important terms to know about {t}? Define each briefly.",
 "Describe a typical day for someone who works with {t}.",
 "Why does {t} matter today?",
]
topics = """photosynthesis; the water cycle; black holes; the French Revolution; machine learning;
recursion in programming; the stock market; volcanoes; honeybees; the Roman Empire; electric cars;
solar panels; the human heart; climate change; chess openings; the Python programming language;
sourdough bread; plate tectonics; the Moon landing; vaccines; the Internet; gardening tomatoes;
the Great Wall of China; jazz music; marathon training; coral reefs; cryptography; the periodic table;
meditation; Shakespeare's plays; recycling plastic; the immune system; rainforests; bicycles;
public libraries; the Olympic Games; hash tables; the theory of evolution; coffee; earthquakes;
renewable energy; the printing press; penguins; budgeting money; learning a new language;
3D printing; the solar system; dinosaurs; sleep; version control with git; friendship;
the ocean tides; democracy; weather forecasting; origami; dogs as pets; the speed of light;
writing a resume; volunteering; composting""".replace("\n"," ").split(";")
topics = [t.strip() for t in topics if t.strip()]
rng = random.Random(1)
rng.shuffle(topics)
evalt, traint = topics[:8], topics[8:]
pairs = [(tp, t) for t in traint for tp in templates]
rng.shuffle(pairs)
train = [tp.format(t=t) for tp, t in pairs]
ev = [tp.format(t=t) for t in evalt for tp in rng.sample(templates, 5)]
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, "chat-train.txt"), "w").write("\n".join(train) + "\n")
open(os.path.join(here, "chat-eval.txt"), "w").write("\n".join(ev) + "\n")
print(len(topics), "topics,", len(train), "training prompts,", len(ev), "evaluation prompts; kept apart:", evalt)
