"""Build the Lambda code asset without Docker.

The asset is one directory: the runtime dependencies from pyproject.toml,
installed as wheels for the Lambda platform (``pip --platform``), plus copies of
the packages the handlers import. The stack points ``Code.from_asset`` at it,
so ``cdk synth`` only reads files and never needs the network or AWS.

boto3 (and botocore, s3transfer) are left out: the Lambda Python runtime ships
them, and leaving them out keeps the asset about 20 MB smaller and cold starts
shorter. Pass ``--with-boto3`` to bundle the pinned version instead.

A rebuild is skipped when nothing it reads has changed: the dependency list,
the target platform and every file of the copied packages are hashed, and the
hash is stored next to the asset. Dependencies are cached separately, keyed by
their own hash, so a code change only copies files.

    python -m infra.build_asset [--out build/lambda] [--force] [--with-boto3]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

PROJECT_ROOT: Final = Path(__file__).resolve().parents[1]
DEFAULT_OUT: Final = PROJECT_ROOT / "build" / "lambda"

# The Lambda runtime and platform the wheels are chosen for. infra/functions.py
# checks that its Runtime constant names the same Python version.
PYTHON_VERSION: Final = "3.14"
PLATFORM: Final = "manylinux2014_aarch64"

# What the handlers import. Tests, infra and the CLI stay out of the asset.
PACKAGES: Final = ("domain", "service", "adapters", "bootstrap", "handlers")
PROVIDED_BY_RUNTIME: Final = frozenset({"boto3", "botocore", "s3transfer"})

_IGNORED_DIRS: Final = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache"})
_IGNORED_SUFFIXES: Final = (".pyc", ".pyo")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class BuildResult:
    out_dir: Path
    input_hash: str
    rebuilt: bool


def runtime_dependencies(pyproject: Path, *, with_boto3: bool = False) -> list[str]:
    """The [project].dependencies requirement strings that go into the asset."""
    with pyproject.open("rb") as f:
        dependencies: list[str] = tomllib.load(f)["project"].get("dependencies", [])
    if with_boto3:
        return list(dependencies)
    kept = []
    for requirement in dependencies:
        match = _REQUIREMENT_NAME.match(requirement)
        name = _normalize(match.group(1)) if match else ""
        if name not in PROVIDED_BY_RUNTIME:
            kept.append(requirement)
    return kept


def build(
    project_root: Path = PROJECT_ROOT,
    out_dir: Path = DEFAULT_OUT,
    *,
    packages: Sequence[str] = PACKAGES,
    with_boto3: bool = False,
    force: bool = False,
) -> BuildResult:
    """Build the asset into ``out_dir`` unless it is already up to date."""
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    requirements = runtime_dependencies(project_root / "pyproject.toml", with_boto3=with_boto3)
    deps_hash = _hash_text("\n".join([PYTHON_VERSION, PLATFORM, *sorted(requirements)]))
    input_hash = _hash_inputs(deps_hash, project_root, packages)
    stamp = out_dir.parent / f"{out_dir.name}.sha256"

    # Several processes (make asset, a test session) may build at once: one
    # builds, the others wait and then find the asset up to date.
    with _locked(out_dir.parent / f".{out_dir.name}.lock"):
        if not force and out_dir.is_dir() and _read(stamp) == input_hash:
            return BuildResult(out_dir, input_hash, rebuilt=False)
        deps_dir = _dependencies(out_dir.parent / ".deps", deps_hash, requirements)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
        try:
            shutil.copytree(deps_dir, staging, dirs_exist_ok=True)
            for package in packages:
                shutil.copytree(
                    project_root / package,
                    staging / package,
                    ignore=shutil.ignore_patterns(
                        *_IGNORED_DIRS, *(f"*{s}" for s in _IGNORED_SUFFIXES)
                    ),
                )
            _replace_dir(staging, out_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        stamp.write_text(input_hash + "\n")
    return BuildResult(out_dir, input_hash, rebuilt=True)


def _dependencies(cache_root: Path, deps_hash: str, requirements: list[str]) -> Path:
    """Install the requirements once per dependency hash; return the directory."""
    target = cache_root / deps_hash[:16]
    if (target / ".complete").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    if requirements:
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "--platform",
            PLATFORM,
            "--implementation",
            "cp",
            "--python-version",
            PYTHON_VERSION,
            "--only-binary=:all:",
            "--target",
            str(target),
            *requirements,
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            raise RuntimeError(
                f"pip could not install the Lambda dependencies for {PLATFORM}, "
                f"Python {PYTHON_VERSION}:\n{done.stdout}{done.stderr}"
            )
        # Console scripts are of no use inside a Lambda function.
        shutil.rmtree(target / "bin", ignore_errors=True)
    (target / ".complete").write_text(deps_hash + "\n")
    # Keep only the current dependency set; older ones are dead weight.
    for other in cache_root.iterdir():
        if other != target and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)
    return target


def _hash_inputs(deps_hash: str, project_root: Path, packages: Sequence[str]) -> str:
    digest = hashlib.sha256(deps_hash.encode())
    for package in packages:
        root = project_root / package
        if not root.is_dir():
            raise FileNotFoundError(f"package {package!r} not found under {project_root}")
        for path in sorted(_files(root)):
            digest.update(path.relative_to(project_root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _IGNORED_DIRS]
        for name in filenames:
            if not name.endswith(_IGNORED_SUFFIXES):
                yield Path(dirpath) / name


def _replace_dir(new: Path, current: Path) -> None:
    """Swap ``new`` in for ``current`` with renames, so a reader never sees half."""
    _make_readable(new)
    old = current.with_name(f".{current.name}-old-{os.getpid()}")
    if current.exists():
        current.rename(old)
    new.rename(current)
    shutil.rmtree(old, ignore_errors=True)


def _make_readable(root: Path) -> None:
    """Lambda runs the code as another user: every file must be world-readable."""
    root.chmod(0o755)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            (Path(dirpath) / name).chmod(0o755)
        for name in filenames:
            path = Path(dirpath) / name
            path.chmod(path.stat().st_mode | 0o444)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def _hash_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Lambda code asset (no Docker).")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="asset directory")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument(
        "--with-boto3", action="store_true", help="bundle boto3 instead of the runtime's"
    )
    args = parser.parse_args(argv)
    result = build(out_dir=args.out, with_boto3=args.with_boto3, force=args.force)
    state = "built" if result.rebuilt else "up to date"
    print(f"Lambda asset {state}: {result.out_dir} ({result.input_hash[:12]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
