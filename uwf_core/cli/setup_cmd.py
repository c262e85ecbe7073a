"""`uwf setup`: configure providers, models and agents, interactively or with flags."""

from __future__ import annotations

import sys

from .common import repo_of
from .output import emit_json, note


def register(groups, common) -> None:
    parser = groups.add_parser(
        "setup",
        help="configure providers, models and agents (config.yaml, .env)",
        description="Configure providers, models and agents. Without flags (and on a terminal) it asks.",
        parents=[common],
    )
    parser.add_argument("--provider", metavar="NAME", help="provider name, e.g. openrouter")
    parser.add_argument("--base-url", metavar="URL", help="OpenAI-compatible base URL, e.g. https://openrouter.ai/api/v1")
    parser.add_argument("--api-key", metavar="KEY", help="API key (stored in .env, mode 0600)")
    parser.add_argument("--api-key-env", metavar="VAR", help="the .env variable holding the key (default <PROVIDER>_API_KEY)")
    parser.add_argument("--model", metavar="NAME", help="model name at the provider; becomes defaultModel")
    parser.add_argument("--model-alias", metavar="ALIAS", help="alias for --model (default: its last path part)")
    parser.add_argument("--extract-model", metavar="ALIAS", help="model alias used to extract structured output")
    parser.add_argument("--agent-preset", action="append", default=[], metavar="NAME", help="add a known agent CLI: claude, codex, aider, hermes, llm, cursor-agent (`uwf agent presets` shows each line)")
    parser.add_argument("--agent", action="append", default=[], metavar="ALIAS=COMMAND", help="add a step-protocol agent command")
    parser.add_argument("--default-agent", metavar="ALIAS", help="the agent used when nothing else says")
    parser.set_defaults(handler=cmd_setup)


def cmd_setup(args) -> int:
    from ..config.setup import SetupRequest, apply_setup
    from ..engine.resolve import parse_assignments
    from ..errors import UwfError

    agents = parse_assignments(args.agent, "ALIAS=COMMAND")
    request = SetupRequest(
        provider=args.provider,
        base_url=args.base_url,
        api_key=args.api_key,
        api_key_env=args.api_key_env,
        model=args.model,
        model_alias=args.model_alias,
        extract_model=args.extract_model,
        presets=list(args.agent_preset),
        agents=agents,
        default_agent=args.default_agent,
    )
    flags = [v for k, v in vars(request).items() if v]
    if not flags:
        if not sys.stdin.isatty():
            raise UwfError("uwf setup needs flags when not run on a terminal (see `uwf setup --help`)")
        try:
            request = _ask(request)
        except EOFError:
            raise UwfError("setup cancelled (end of input); nothing was written") from None
    repo = repo_of(args)
    config = apply_setup(repo, request)
    note(f"wrote {repo.backend.config.location}" + (f" and {repo.env_path}" if request.api_key else ""))
    emit_json(config.to_dict())
    return 0


def _ask(request):
    """The questions, each skippable with a blank answer; nothing is written until all are answered."""
    import getpass

    from ..config.presets import PRESETS

    def ask(question: str, default: str = "") -> str:
        shown = f" [{default}]" if default else ""
        answer = input(f"{question}{shown}: ").strip()
        return answer or default

    note("every question can be skipped with a blank answer; nothing is written until the end")
    request.provider = ask("LLM provider name, for uwf-builtin and the extract fallback (blank: skip the LLM setup)") or None
    if request.provider:
        request.base_url = ask("Base URL (OpenAI-compatible)", "https://openrouter.ai/api/v1")
        request.api_key = getpass.getpass("API key (stored in .env, mode 0600; not shown; blank: add it later): ").strip() or None
        if request.api_key is None:
            note(f"no key stored: put it in .env later with `uwf setup --provider {request.provider} --api-key KEY`")
        request.model = ask("Model name at the provider (blank: none yet)") or None
    presets = ask(f"Agent CLIs to add ({', '.join(PRESETS)}; comma-separated, blank for none)")
    request.presets = [name.strip() for name in presets.split(",") if name.strip()]
    choices = [*request.presets, *(["uwf-builtin"] if request.model else [])]
    if choices:
        request.default_agent = ask(f"Default agent ({', '.join(choices)}; blank for none)", choices[0]) or None
    return request
