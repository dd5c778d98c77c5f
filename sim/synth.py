"""The templates the simulator runs: synthesized by the CDK, in Python, offline.

The same way the infra tests do it (tests/infra/conftest.py): the Lambda
asset is built without Docker, one CDK app holds every stack the scenarios
need, cdk-nag checks them during synthesis, and ``app.synth()`` gives each
stack's CloudFormation template. Synthesis costs 15-20 s, so the templates
are kept in ``build/sim/`` under a hash of everything they depend on (the
infra sources, the asset, this file, the stacks asked for) and synthesized
again, by a new process that imports the files as they are, only when one of
those changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

PROJECT_ROOT: Final = Path(__file__).resolve().parents[1]
CACHE_DIR: Final = PROJECT_ROOT / "build" / "sim"

# jsii reads these when its Node process starts, at the first aws_cdk import.
QUIET_ENV: Final = {
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "CDK_DISABLE_VERSION_CHECK": "1",
    "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED": "true",
    "npm_config_update_notifier": "false",
}

# The stacks the scenarios deploy: name -> Settings overrides (CDK context values).
STACKS: Final[dict[str, dict[str, Any]]] = {
    "Duetime": {},
    "DuetimeOther": {"stack_name": "DuetimeOther"},
}


def _inputs_hash(stacks: dict[str, dict[str, Any]], asset_hash: str) -> str:
    digest = hashlib.sha256(json.dumps(stacks, sort_keys=True).encode())
    digest.update(asset_hash.encode())
    # This file too: a change to how templates are made leaves the old ones behind.
    inputs = [*sorted((PROJECT_ROOT / "infra").glob("*.py")), PROJECT_ROOT / "cdk.json"]
    for path in [*inputs, Path(__file__).resolve()]:
        if path.exists():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


def synthesize(
    stacks: dict[str, dict[str, Any]] | None = None, *, fresh: bool = False
) -> dict[str, dict[str, Any]]:
    """Each stack's template, from a cache when nothing it depends on changed.

    A missing template is synthesized by a new Python process. The cache key is
    a hash of the files on disk, and only a process that imports the infra
    modules after hashing them is sure to synthesize those files: a long-lived
    one (a test session) may hold modules imported before the files changed,
    and would keep their template under the new files' key.
    """
    stacks = dict(STACKS if stacks is None else stacks)
    cache = _cache_path(stacks)
    if cache.exists() and not fresh:
        templates: dict[str, dict[str, Any]] = json.loads(cache.read_text())
        return templates
    command = [sys.executable, "-m", "sim.synth", json.dumps(stacks)]
    env = {**os.environ, **QUIET_ENV, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(
        command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"synthesis failed ({done.returncode}):\n{done.stderr[-4000:]}")
    path = Path(done.stdout.strip().splitlines()[-1])
    written: dict[str, dict[str, Any]] = json.loads(path.read_text())
    if path.name.startswith("unkept-"):
        path.unlink()
    return written


def _cache_path(stacks: dict[str, dict[str, Any]]) -> Path:
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    from infra import build_asset

    asset = build_asset.build()
    return CACHE_DIR / f"templates-{_inputs_hash(stacks, asset.input_hash)}.json"


def _synthesize_here(stacks: dict[str, dict[str, Any]]) -> Path:
    """Synthesize in this process, which must not have imported the infra modules
    before: keep the templates under the hash of the files they were made from."""
    cache = _cache_path(stacks)
    from aws_cdk import App

    import infra
    from infra.nag import add_checks
    from infra.settings import Settings
    from infra.stack import DuetimeStack

    source = Path(infra.__file__).resolve().parent
    if source != PROJECT_ROOT / "infra":
        raise RuntimeError(f"infra imported from {source}, not {PROJECT_ROOT / 'infra'}")
    outdir = CACHE_DIR / "cdk.out"
    app = App(outdir=str(outdir))
    for name, overrides in stacks.items():
        DuetimeStack(app, name, settings=Settings(**{"stack_name": name, **overrides}))
    add_checks(app)
    assembly = app.synth()
    templates = {name: assembly.get_stack_by_name(name).template for name in stacks}
    if _cache_path(stacks) != cache:
        # The sources changed while synthesizing: which of them made the
        # template is unknown, so it is given to this run but not kept.
        cache = CACHE_DIR / f"unkept-{os.getpid()}.json"
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(templates))
    return cache


def with_variables(templates: dict[str, dict[str, Any]], values: dict[str, str]) -> dict[str, Any]:
    """The templates with each of ``values`` (an environment variable's new value) set on
    every function of every stack that has that variable: a run can measure another
    setting (``--surge-min``, ``--lookahead``) without synthesizing again."""
    import copy

    changed = copy.deepcopy(templates)
    for template in changed.values():
        for resource in template["Resources"].values():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            for name, value in values.items():
                if name in variables:
                    variables[name] = value
    return changed


def environment_names(templates: dict[str, dict[str, Any]]) -> set[str]:
    """The environment variables any function of ``templates`` has (what ``--set`` may change)."""
    return {
        name
        for template in templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        for name in resource["Properties"].get("Environment", {}).get("Variables", {})
    }


def with_memory(
    templates: dict[str, dict[str, Any]], handler: str, memory_mb: int
) -> dict[str, Any]:
    """The templates with every function running ``handler`` given ``memory_mb`` (the
    CPU share the simulator charges follows it), as a memory setting would synthesize."""
    import copy

    changed = copy.deepcopy(templates)
    for template in changed.values():
        for resource in template["Resources"].values():
            props = resource["Properties"] if resource["Type"] == "AWS::Lambda::Function" else {}
            if props.get("Handler") == handler:
                props["MemorySize"] = memory_mb
    return changed


def with_surge_min(templates: dict[str, dict[str, Any]], surge_min: int) -> dict[str, Any]:
    """The templates with every stack's ``surgeMin`` as its API and tick read it,
    and the tick's crowd with it, as synthesis resolves ``crowdMin`` left unset
    (infra/settings.py ``crowd``)."""
    from adapters.definitions import ENV_CROWD_MIN, ENV_SURGE_MIN

    return with_variables(templates, {ENV_SURGE_MIN: str(surge_min), ENV_CROWD_MIN: str(surge_min)})


if __name__ == "__main__":
    # The child synthesize() starts: the stacks as JSON; prints the file it wrote.
    print(_synthesize_here(json.loads(sys.argv[1])))
