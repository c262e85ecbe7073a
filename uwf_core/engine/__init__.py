"""One step of a thread: the step transaction (lock, moderator, agent, verify, compare-and-set),
the agent protocols it drives (step, text, human), prompt assembly, extraction and processes.
"""
