"""The python agent's machinery: a function located and loaded (`load.py`), called under the
deadline (`call.py`), what it prints (`output.py`), the context it is given (`context.py`), the
child of an isolated function (`host.py`). The protocol that drives them is protocols/python.py.

May import: the step's terms (attempt, resolve, prompt, tracing) and contain/ (a Cancel)."""
