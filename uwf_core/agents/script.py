"""`uwf-script`: a deterministic agent that answers from a YAML script.

The script maps each role to a list of canned answers (frontmatter markdown,
or {output, body}); the n-th time a role runs in a thread it gets the n-th
answer, so a run is reproducible and a fork replays from where it left.
This is how workflows are tested without an LLM, and how the demo runs
offline.
"""

from __future__ import annotations

import os
import sys

from ..errors import UwfError
from .kit import AgentAnswer, AgentContext, run_agent

NAME = "uwf-script"


def _configure(parser) -> None:
    parser.add_argument("--script", metavar="FILE", help="the script YAML (default: $UWF_SCRIPT)")
    parser.add_argument(
        "--script-dir",
        metavar="DIR",
        help="pick <workflow-name>.script.yaml from DIR by the thread's workflow (default: $UWF_SCRIPT_DIR)",
    )


def script_path(ctx: AgentContext) -> str:
    options = ctx.options
    if options.get("script"):
        return options["script"]
    directory = options.get("script_dir") or os.environ.get("UWF_SCRIPT_DIR")
    if directory:
        return os.path.join(directory, f"{ctx.workflow.name}.script.yaml")
    if os.environ.get("UWF_SCRIPT"):
        return os.environ["UWF_SCRIPT"]
    raise UwfError("no script: pass --script FILE or --script-dir DIR, or set UWF_SCRIPT or UWF_SCRIPT_DIR")


def load_script(path: str) -> dict:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except FileNotFoundError:
        raise UwfError(f"script {path} not found") from None
    except OSError as exc:
        raise UwfError(f"cannot read script {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise UwfError(f"script {path}{line} is not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise UwfError(f"script {path} must map role names to lists of answers")
    roles = data.get("roles", data)
    if not isinstance(roles, dict):
        raise UwfError(f"script {path}: 'roles' must map role names to lists of answers")
    return roles


def answer_text(entry: object, where: str) -> str:
    import yaml

    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("output"), dict):
        frontmatter = yaml.safe_dump(entry["output"], sort_keys=False, allow_unicode=True)
        return f"---\n{frontmatter}---\n{entry.get('body') or ''}"
    raise UwfError(f"{where} must be frontmatter markdown or a mapping with 'output' (and 'body')")


def run(ctx: AgentContext) -> AgentAnswer:
    path = script_path(ctx)
    roles = load_script(path)
    answers = roles.get(ctx.role.name)
    if answers is None:
        raise UwfError(f"script {path} has no answers for role '{ctx.role.name}'")
    if not isinstance(answers, list):
        answers = [answers]
    index = ctx.count_of_role()
    if index >= len(answers):
        raise UwfError(
            f"script {path} ran out of answers for role '{ctx.role.name}': this is its run #{index + 1}, "
            f"the script has {len(answers)}"
        )
    where = f"script {path}: {ctx.role.name}[{index}]"
    return AgentAnswer(answer_text(answers[index], where), {"script": os.path.abspath(path), "answer": index})


def main(argv: list[str] | None = None) -> int:
    # No LLM fallback: a script is meant to be exact, and must run offline.
    return run_agent(NAME, run, argv, configure=_configure, description=__doc__.splitlines()[0], llm_fallback=False)


if __name__ == "__main__":
    sys.exit(main())
