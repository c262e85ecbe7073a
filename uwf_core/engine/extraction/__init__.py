"""An answer read out of an agent's words: the frontmatter and its corrections (`extract.py`), the
LLM fallback (`llm.py`) and the evidence its output is held to (`evidence.py`).

May import: the step's terms (attempt, resolve, prompt, tracing)."""
