"""`uwf setup`: configure providers, models and agents, interactively or with flags."""

from __future__ import annotations

import sys

from .common import repo_of
from .output import emit_json, note, warn


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
    parser.add_argument("--supervisor-model", metavar="ALIAS", help="model alias of the supervisor (supervisorInterval; default: defaultModel)")
    parser.add_argument("--summarizer-model", metavar="ALIAS", help="model alias that summarizes each finished thread (default: the extraction model; `summarizer: false` in config.yaml: none)")
    parser.add_argument("--summarizer", choices=("on", "off"), help="summarize each finished thread with a model (on, the default) or keep its last output's summary (off)")
    parser.add_argument("--agent-preset", action="append", default=[], metavar="NAME", help="add a known agent CLI: claude, codex, aider, hermes, llm, cursor-agent (`uwf agent presets` shows each line)")
    parser.add_argument("--agent", action="append", default=[], metavar="ALIAS=COMMAND", help="add a step-protocol agent command")
    parser.add_argument("--default-agent", metavar="ALIAS", help="the agent used when nothing else says")
    parser.set_defaults(handler=cmd_setup)


def cmd_setup(args) -> int:
    from ..config.setup import SetupRequest, apply_setup, preset_warnings
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
        supervisor_model=args.supervisor_model,
        summarizer_model=args.summarizer_model,
        summarizer=None if args.summarizer is None else args.summarizer == "on",
        presets=list(args.agent_preset),
        agents=agents,
        default_agent=args.default_agent,
    )
    flags = [v for k, v in vars(request).items() if v or v is False]
    repo = repo_of(args)
    if not flags:
        if not sys.stdin.isatty():
            raise UwfError("uwf setup needs flags when not run on a terminal (see `uwf setup --help`)")
        try:
            request = _ask(request, repo.config)
        except EOFError:
            raise UwfError("setup cancelled (end of input); nothing was written") from None
    config = apply_setup(repo, request)
    note(f"wrote {repo.backend.config.location}" + (f" and {repo.env_path}" if request.api_key else ""))
    for warning in preset_warnings(config, request.presets):
        warn(warning)
    emit_json(config.to_dict())
    return 0


def _ask(request, config):
    """The questions, each skippable with a blank answer. An answer that cannot be used is
    asked again, saying why, so nothing typed is lost to an error at the end; nothing is
    written until every answer is in."""
    import getpass

    from ..config.presets import PRESETS

    def ask(question: str, default: str = "", check=None) -> str:
        shown = f" [{default}]" if default else ""
        while True:
            answer = input(f"{question}{shown}: ").strip() or default
            problem = check(answer) if check and answer else None
            if problem is None:
                return answer
            note(f"{problem}; try again (blank skips)")

    note("every question can be skipped with a blank answer; nothing is written until the end")
    request.provider = ask("LLM provider name, for uwf-builtin and the extract fallback (blank: skip the LLM setup)") or None
    if request.provider:
        request.base_url = ask("Base URL (OpenAI-compatible)", "https://openrouter.ai/api/v1", _url_problem)
        request.api_key = getpass.getpass("API key (stored in .env, mode 0600; not shown; blank: add it later): ").strip() or None
        if request.api_key is None:
            note(f"no key stored: put it in .env later with `uwf setup --provider {request.provider} --api-key KEY`")
        request.model = ask("Model name at the provider (blank: none yet)") or None

    def unknown_presets(answer: str) -> str | None:
        unknown = [name for name in _names(answer) if name not in PRESETS]
        return f"unknown agent preset {', '.join(map(repr, unknown))} (presets: {', '.join(PRESETS)})" if unknown else None

    presets = ask(f"Agent CLIs to add ({', '.join(PRESETS)}; comma-separated, blank for none)", check=unknown_presets)
    request.presets = _names(presets)
    request.default_agent = _ask_default_agent(ask, request, config)
    return request


def _ask_default_agent(ask, request, config) -> str | None:
    """Offer the agents this setup makes usable; the suggestion in brackets is what Enter takes,
    and "none" leaves defaultAgent as it is."""
    from ..config.setup import usable_agents

    has_model = bool(request.model or config.default_model)
    offered = list(dict.fromkeys([*request.presets, *config.agents, *(["uwf-builtin"] if has_model else [])]))
    if not offered and not request.provider:
        return None  # nothing to choose from: the LLM part was skipped and no agent was added
    known = set(usable_agents(config.agents)) | set(request.presets)
    suggestion = config.default_agent or (offered[0] if offered else "")

    def unknown(answer: str) -> str | None:
        if answer == "none" or answer in known:
            return None
        return f"'{answer}' is not an agent here (configured or just added: {', '.join(offered) or 'none'}; built-in: {', '.join(sorted(known - set(offered)))})"

    choices = f"{', '.join(offered)}; " if offered else ""
    hint = "" if has_model else "; uwf-builtin needs a model"
    answer = ask(f"Default agent ({choices}\"none\" skips{hint})", suggestion, unknown)
    return None if answer in ("", "none") else answer


def _names(answer: str) -> list[str]:
    return [name.strip() for name in answer.split(",") if name.strip()]


def _url_problem(url: str) -> str | None:
    return None if url.startswith(("http://", "https://")) else f"'{url}' is not an http(s) URL"
