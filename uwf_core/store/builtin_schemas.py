"""The schemas uwf registers on first use: workflow, start-node, step-node, content, detail.

Each uses only the meta-schema's keyword subset, so any json-cas store can hold them.
"""

from __future__ import annotations

STRING = {"type": "string"}
CAS_REF = {"type": "string", "format": "cas_ref"}
OPTIONAL_CAS_REF = {"type": ["string", "null"], "format": "cas_ref"}

ROLE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["description", "goal", "capabilities", "procedure", "output", "meta"],
    "properties": {
        "description": STRING,
        "goal": STRING,
        "capabilities": {"type": "array", "items": STRING},
        "procedure": STRING,
        "output": STRING,
        "meta": CAS_REF,
    },
}

CONDITION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["description", "expression"],
    "properties": {"description": STRING, "expression": STRING},
}

TRANSITION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["role", "condition"],
    "properties": {"role": STRING, "condition": {"type": ["string", "null"]}, "prompt": STRING},
}

TARGET = {
    "type": "object",
    "additionalProperties": False,
    "required": ["role"],
    "properties": {"role": STRING, "prompt": STRING},
}

WORKFLOW = {
    "title": "workflow",
    "description": "A workflow definition: roles, named JSONata conditions and a routing graph",
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "description", "maxSteps", "roles", "conditions", "graph"],
    "properties": {
        "name": STRING,
        "description": STRING,
        "maxSteps": {"type": "integer"},
        "roles": {"type": "object", "additionalProperties": ROLE},
        "conditions": {"type": "object", "additionalProperties": CONDITION},
        "graph": {
            "type": "object",
            "additionalProperties": {
                "anyOf": [
                    {"type": "array", "items": TRANSITION},
                    {"type": "object", "additionalProperties": TARGET},
                ]
            },
        },
    },
}

START_NODE = {
    "title": "start-node",
    "description": "The first node of a thread: workflow, prompt, workspace, agent bindings",
    "type": "object",
    "additionalProperties": False,
    "required": ["workflow", "prompt"],
    "properties": {
        "workflow": CAS_REF,
        "prompt": STRING,
        "workspace": {"type": ["string", "null"]},
        "resumes": OPTIONAL_CAS_REF,
        "agents": {"anyOf": [{"type": "object", "additionalProperties": STRING}, {"type": "null"}]},
    },
}

STEP_NODE = {
    "title": "step-node",
    "description": "One completed role of a thread",
    "type": "object",
    "additionalProperties": False,
    "required": ["start", "prev", "role", "output", "detail", "agent"],
    "properties": {
        "start": CAS_REF,
        "prev": OPTIONAL_CAS_REF,
        "role": STRING,
        "output": CAS_REF,
        "detail": CAS_REF,
        "agent": STRING,
        "instruction": {"type": ["string", "null"]},
        "startedAt": {"type": "integer"},
        "completedAt": {"type": "integer"},
    },
}

CONTENT = {"title": "content", "description": "Raw text: an agent's answer, a prompt, a source file", "type": "string"}

DETAIL = {
    "title": "detail",
    "description": "An agent's execution record: turns, tool calls, usage, timing",
    "type": "object",
    "additionalProperties": True,
    "properties": {
        "agent": STRING,
        "protocol": STRING,
        "prompt": OPTIONAL_CAS_REF,
        "content": OPTIONAL_CAS_REF,
        "extract": {"type": ["string", "null"]},
        "child": OPTIONAL_CAS_REF,
        "turns": {"type": "array", "items": {"type": "object"}},
        "usage": {"type": "object"},
        "startedAt": {"type": "integer"},
        "completedAt": {"type": "integer"},
    },
}

BUILTIN = {
    "workflow": WORKFLOW,
    "start-node": START_NODE,
    "step-node": STEP_NODE,
    "content": CONTENT,
    "detail": DETAIL,
}

# Each schema's hash as `schema_hash` gives it, written out: computing them (18 CBOR encodings)
# cost ~4 ms of every `uwf` start. tests/store/test_hash_vectors.py computes every one again from
# its schema, so a schema changed without its hash fails there, never in a root.
KNOWN_HASHES = {
    "meta": "56GP9CC0KVQF8",
    "workflow": "FPKFTNKSN735G",
    "start-node": "7HRT48S7C6NN2",
    "step-node": "95PS2EQTNQEGS",
    "content": "F1T74N293WADE",
    "detail": "EBYFPGPKHM0AG",
    "workflow-with-locations": "4E06N6A0070DM",
    "workflow-with-budget": "ABSBS4MKB3XYX",
    "workflow-with-workspace": "643T1AGQJTFJJ",
    "workflow-with-supervisor": "FSJ5Z6GKCGCJC",
    "workflow-with-maps": "D3TJR8C0B0DR0",
    "start-node-with-budget": "ET006VH9R4VX1",
    "tree": "6N89BF7FP20HS",
    "bytes": "DH79S7YSE86B4",
    "start-node-with-files": "6CZ3D93HZF380",
    "step-node-with-files": "2GXAPKZ1TQ78S",
    "prompt": "1V9EGZSFXS07H",
    "history-entry": "442TKZZWJ9W1R",
}
META_HASH = KNOWN_HASHES["meta"]


def schema_hash(schema: dict) -> str:
    """The hash a schema node gets: its type is the meta-schema."""
    from ..encoding.cbor import encode
    from ..encoding.ids import xxh64_hash

    return xxh64_hash(META_HASH.encode("ascii") + encode(schema))


BUILTIN_HASHES = {name: KNOWN_HASHES[name] for name in BUILTIN}


def _workflow_with_locations() -> dict:
    """The workflow schema whose status-map targets may name a `location` (a working directory)."""
    target = {**TARGET, "properties": {**TARGET["properties"], "location": STRING}}
    routes = {"anyOf": [{"type": "array", "items": TRANSITION}, {"type": "object", "additionalProperties": target}]}
    graph = {**WORKFLOW["properties"]["graph"], "additionalProperties": routes}
    return {**WORKFLOW, "properties": {**WORKFLOW["properties"], "graph": graph}}


# A workflow that names no location is stored under the plain workflow schema, so its hash is
# what it always was (and older uwf versions read it); one that does gets this schema, which is
# registered when first needed. A node's type is part of its hash: both stay readable forever.
WORKFLOW_WITH_LOCATIONS = _workflow_with_locations()

# A workflow with a budget (`maxTokens`, `maxCost`) gets this schema (locations allowed too); the
# others keep theirs, so no existing workflow's hash changes.
WORKFLOW_WITH_BUDGET = {
    **WORKFLOW_WITH_LOCATIONS,
    "properties": {**WORKFLOW_WITH_LOCATIONS["properties"], "maxTokens": {"type": "integer"}, "maxCost": {"type": "number"}},
}
# A workflow that turns snapshots of its threads' files off (`workspace: {snapshot: false}`).
WORKFLOW_WITH_WORKSPACE = {
    **WORKFLOW_WITH_BUDGET,
    "properties": {
        **WORKFLOW_WITH_BUDGET["properties"],
        "workspace": {"type": "object", "additionalProperties": False, "properties": {"snapshot": {"type": "boolean"}}},
    },
}
# A workflow with a supervisor of its own (`supervisorInterval`).
WORKFLOW_WITH_SUPERVISOR = {
    **WORKFLOW_WITH_WORKSPACE,
    "properties": {**WORKFLOW_WITH_WORKSPACE["properties"], "supervisorInterval": {"type": "integer"}},
}
# A workflow with a role that fans out (`map:`): its roles may carry the map.
MAP = {
    "type": "object",
    "additionalProperties": False,
    "required": ["over", "workflow", "onFailure"],
    "properties": {
        "over": STRING,
        "workflow": STRING,
        "prompt": STRING,
        "maxParallel": {"type": "integer"},
        "onFailure": {"type": "string", "enum": ["fail", "collect"]},
    },
}
WORKFLOW_WITH_MAPS = {
    **WORKFLOW_WITH_SUPERVISOR,
    "properties": {
        **WORKFLOW_WITH_SUPERVISOR["properties"],
        "roles": {"type": "object", "additionalProperties": {**ROLE, "properties": {**ROLE["properties"], "map": MAP}}},
    },
}
# A map role's output: its children in item order, each with its thread, how it ended and its last output.
MAP_OUTPUT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["results"],
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["index", "thread", "status"],
                "properties": {
                    "index": {"type": "integer"},
                    "thread": STRING,
                    "status": {"type": "string", "enum": ["done", "failed"]},
                    "output": {},
                    "error": STRING,
                },
            },
        },
    },
}
WORKFLOW_TYPES = frozenset(
    {
        BUILTIN_HASHES["workflow"],
        KNOWN_HASHES["workflow-with-locations"],
        KNOWN_HASHES["workflow-with-budget"],
        KNOWN_HASHES["workflow-with-workspace"],
        KNOWN_HASHES["workflow-with-supervisor"],
        KNOWN_HASHES["workflow-with-maps"],
    }
)

# A StartNode with a budget of its own (`thread start --max-tokens/--max-cost`); one without keeps
# the start-node schema and its hash. Both are StartNodes (thread/nodes.py START_TYPES).
BUDGET = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"maxTokens": {"type": "integer"}, "maxCost": {"type": "number"}},
}
START_NODE_WITH_BUDGET = {**START_NODE, "properties": {**START_NODE["properties"], "budget": BUDGET}}
START_WITH_BUDGET_HASH = KNOWN_HASHES["start-node-with-budget"]

# A thread's files (workspace/): a directory is a tree node, one entry per name, sorted by the
# name's bytes; a file's bytes are a content node when they are UTF-8 text, else a bytes node. An
# entry is named by `name`, or by `nameBase64` when the name is not UTF-8; `kind` is file, exec
# (the executable bit), link (its `target`, never followed) or dir (`ref`, a tree).
TREE_ENTRY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "name": STRING,
        "nameBase64": STRING,
        "kind": {"type": "string", "enum": ["file", "exec", "link", "dir"]},
        "ref": CAS_REF,
        "size": {"type": "integer"},
        "target": STRING,
        "targetBase64": STRING,
    },
}
TREE = {
    "title": "tree",
    "description": "One directory of a workspace snapshot: its entries, sorted by name bytes",
    "type": "object",
    "additionalProperties": False,
    "required": ["entries"],
    "properties": {"entries": {"type": "array", "items": TREE_ENTRY}},
}
TREE_HASH = KNOWN_HASHES["tree"]
BYTES = {
    "title": "bytes",
    "description": "A file's bytes that are not UTF-8 text, in base64",
    "type": "object",
    "additionalProperties": False,
    "required": ["base64"],
    "properties": {"base64": STRING},
}
BYTES_HASH = KNOWN_HASHES["bytes"]

# A StartNode or StepNode that names the thread's files: `files`, the workspace's tree (at the
# start; after the step), and on a step `filesBefore`, the tree it began from when that was not
# the previous snapshot (the workspace was changed by hand in between). A StartNode may turn
# snapshots off (`snapshot: false`). Threads without files keep the older schemas and hashes.
START_NODE_WITH_FILES = {
    **START_NODE_WITH_BUDGET,
    "properties": {**START_NODE_WITH_BUDGET["properties"], "files": CAS_REF, "snapshot": {"type": "boolean"}},
}
START_WITH_FILES_HASH = KNOWN_HASHES["start-node-with-files"]
STEP_NODE_WITH_FILES = {**STEP_NODE, "properties": {**STEP_NODE["properties"], "files": CAS_REF, "filesBefore": CAS_REF}}
STEP_WITH_FILES_HASH = KNOWN_HASHES["step-node-with-files"]


# A text agent's prompt as it was sent, stored so that what repeats from step to step is stored
# once: the text before the history (the same for every step of a role with the same task), the
# history as one reference to the newest entry shown and how many entries it shows (thread/
# history.py: each earlier step's block is an entry every later prompt shares), and the text
# after it. The exact text is `before + lead + "\n\n".join(blocks) + after`. Registered when
# first needed, like the location workflow schema; a prompt stored as one content node (older
# roots, agents of other languages) reads the same.
PROMPT = {
    "title": "prompt",
    "description": "A prompt as sent: before + lead + the newest `entries` history blocks ending at `history`, joined by blank lines, + after",
    "type": "object",
    "additionalProperties": False,
    "required": ["before", "lead", "history", "entries", "after"],
    "properties": {"before": CAS_REF, "lead": STRING, "history": OPTIONAL_CAS_REF, "entries": {"type": "integer"}, "after": CAS_REF},
}
PROMPT_HASH = KNOWN_HASHES["prompt"]
