"""`uwf setup`: write config.yaml and .env from answers or flags.

Secrets go to .env only (mode 0600); config.yaml names the variable.
"""

from __future__ import annotations

from ..encoding.records import field, record, replace

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from .agents import BUILT_IN
from .model import AgentConfig, Config, ModelConfig, ProviderConfig
from .presets import NEEDS_EXTRACT_MODEL, PRESETS

if TYPE_CHECKING:
    from ..repo import (
        Repo,  # passed in by the caller; config/ never imports above itself
    )


@record
class SetupRequest:
    """`uwf setup`'s answers, each optional: what is left None keeps what config.yaml and .env hold."""

    provider: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    model: str | None = None  # the model's name at the provider
    model_alias: str | None = None
    extract_model: str | None = None  # alias for modelOverrides.extract
    supervisor_model: str | None = None  # alias for modelOverrides.supervisor
    summarizer_model: str | None = None  # alias for modelOverrides.summarizer
    summarizer: bool | None = None  # `summarizer: false` in config.yaml (False), or back on (True)
    presets: list[str] = field(default_factory=list)
    agents: dict[str, str] = field(default_factory=dict)  # alias -> command line (step protocol)
    default_agent: str | None = None


def default_key_env(provider: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in provider).upper() + "_API_KEY"


def merge_setup(config: Config, request: SetupRequest) -> tuple[Config, dict[str, str]]:
    """The config with the request merged in, and the .env keys to set. Everything is checked
    here, before the caller writes anything."""
    providers = dict(config.providers)
    provider = _merge_provider(providers, request)
    models, default_model, model_overrides = _merge_models(config, providers, provider, request)
    agents = _merge_agents(dict(config.agents), request)
    default_agent = request.default_agent or config.default_agent
    if request.default_agent and request.default_agent not in usable_agents(agents):
        raise UwfError(
            f"--default-agent '{request.default_agent}' is neither a configured agent ({', '.join(agents) or 'none yet'}) "
            f"nor a built-in one ({', '.join(BUILT_IN)})"
        )
    new = replace(
        config,
        providers=providers,
        models=models,
        agents=agents,
        default_agent=default_agent,
        default_model=default_model,
        model_overrides=model_overrides,
        summarizer=config.summarizer if request.summarizer is None else request.summarizer,
    )
    secrets: dict[str, str] = {}
    if request.api_key:
        key_env = providers[provider].api_key_env if provider is not None else None
        assert key_env is not None  # _merge_provider refuses an api key without a provider, and gives that one a variable
        secrets = {key_env: request.api_key}
    return new, secrets


def usable_agents(agents: dict[str, AgentConfig]) -> list[str]:
    """What defaultAgent may name: a configured alias, or a command uwf ships (usable without an entry)."""
    return [*agents, *(name for name in BUILT_IN if name not in agents)]


# Providers whose OpenAI-compatible endpoint is well known: --base-url may be left out.
KNOWN_BASE_URLS = {"openrouter": "https://openrouter.ai/api/v1", "openai": "https://api.openai.com/v1"}


def _merge_provider(providers: dict[str, ProviderConfig], request: SetupRequest) -> str | None:
    """Add or update the request's provider in place; returns its name (None when none is involved)."""
    provider = request.provider
    if request.base_url or request.api_key or request.api_key_env:
        if not provider:
            provider = next(iter(providers), None) or "default"
    if provider:
        existing = providers.get(provider)
        base_url = request.base_url or (existing.base_url if existing else None) or KNOWN_BASE_URLS.get(provider)
        if not base_url:
            known = " and ".join(KNOWN_BASE_URLS)
            raise UwfError(f"provider '{provider}' needs a base URL (--base-url; {known} have one by default)")
        key_env = request.api_key_env or (existing.api_key_env if existing else None) or default_key_env(provider)
        providers[provider] = ProviderConfig(provider, base_url.rstrip("/"), key_env)
    elif request.api_key:
        raise UwfError("--api-key needs a provider (--provider and --base-url)")
    return provider


def _merge_models(
    config: Config, providers: dict[str, ProviderConfig], provider: str | None, request: SetupRequest
) -> tuple[dict[str, ModelConfig], str | None, dict[str, str]]:
    models = dict(config.models)
    default_model = config.default_model
    if request.model:
        owner = provider or next(iter(providers), None)
        if owner is None:
            raise UwfError("--model needs a provider (--provider and --base-url)")
        alias = request.model_alias or request.model.rsplit("/", 1)[-1]
        models[alias] = ModelConfig(alias, owner, request.model)
        default_model = alias
    model_overrides = dict(config.model_overrides)
    for purpose, chosen in (("extract", request.extract_model), ("supervisor", request.supervisor_model), ("summarizer", request.summarizer_model)):
        if chosen:
            if chosen not in models:
                raise UwfError(f"--{purpose}-model '{chosen}' is not a model alias ({', '.join(models) or 'none yet'})")
            model_overrides[purpose] = chosen
    return models, default_model, model_overrides


def _merge_agents(agents: dict[str, AgentConfig], request: SetupRequest) -> dict[str, AgentConfig]:
    import shlex

    for name in request.presets:
        if name not in PRESETS:
            raise UwfError(f"unknown agent preset '{name}' (presets: {', '.join(PRESETS)})")
        agents[name] = PRESETS[name]
    for alias, command_line in request.agents.items():
        try:
            argv = shlex.split(command_line)
        except ValueError as exc:
            raise UwfError(f"--agent {alias}=...: {exc}") from None
        if not argv:
            raise UwfError(f"--agent {alias}= needs a command")
        agents[alias] = AgentConfig(alias, argv[0], tuple(argv[1:]), "step")
    return agents


def preset_warnings(config: Config, presets: list[str]) -> list[str]:
    """What would make a preset just added fail its first step: its CLI not on PATH, or (aider) no
    extract model to read an answer that does not start with its frontmatter."""
    import shutil

    warnings = []
    for name in dict.fromkeys(presets):
        agent = config.agents.get(name)
        if agent is not None and shutil.which(agent.command) is None:
            warnings.append(f"agent preset '{name}': {agent.command} is not on PATH; install it, or its steps fail with 'not found'")
        if name in NEEDS_EXTRACT_MODEL and not (config.model_overrides.get("extract") or config.default_model):
            warnings.append(
                f"agent preset '{name}' prints more than its answer, which uwf reads with an extract model, and none is "
                f"configured: add one with `uwf setup --provider NAME --api-key KEY --model MODEL`"
            )
    return warnings


def apply_setup(repo: Repo, request: SetupRequest) -> Config:
    """Merge the request into the root's config and this host's .env; returns the new config.
    The key is written before the config that names it, and only after every check passed."""
    with repo.backend.config_lock():  # read afresh and written back whole: a parallel setup's change is kept
        repo.reload_config()
        config, secrets = merge_setup(repo.config, request)
        if secrets:
            repo.update_env(secrets)
        repo.save_config(config)
    return config
