"""The Lambda asset: wheels for the Lambda platform plus the handlers' packages, built once."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from infra import build_asset


def test_the_asset_holds_the_handlers_packages_and_nothing_of_the_tooling(
    lambda_asset: Path,
) -> None:
    names = {p.name for p in lambda_asset.iterdir()}
    assert set(build_asset.PACKAGES) <= names
    assert not names & {"tests", "infra", "cli", "bench", "docs"}
    assert not list(lambda_asset.rglob("__pycache__"))


def test_dependencies_are_wheels_for_lambda_arm64_and_its_python(lambda_asset: Path) -> None:
    tag = build_asset.PYTHON_VERSION.replace(".", "")
    binaries = list((lambda_asset / "pydantic_core").glob("*.so"))
    assert binaries, "pydantic_core is missing"
    assert all(f"cpython-{tag}-aarch64-linux-gnu" in b.name for b in binaries)
    installed = {
        _normalize(p.name.split("-")[0]) for p in lambda_asset.glob("*.dist-info") if p.is_dir()
    }
    for requirement in build_asset.runtime_dependencies(
        build_asset.PROJECT_ROOT / "pyproject.toml"
    ):
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert name and _normalize(name.group(0)) in installed, requirement


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_boto3_is_left_to_the_lambda_runtime(lambda_asset: Path) -> None:
    for name in ("boto3", "botocore", "s3transfer"):
        assert not (lambda_asset / name).exists()


def test_every_file_is_readable_by_the_lambda_runtime_user(lambda_asset: Path) -> None:
    for dirpath, _, filenames in os.walk(lambda_asset):
        for name in filenames:
            mode = (Path(dirpath) / name).stat().st_mode
            assert mode & stat.S_IROTH, Path(dirpath) / name


def test_runtime_dependencies_come_from_pyproject_without_boto3(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\ndependencies = ["boto3>=1.44", "Botocore", "pydantic>=2,<3"]\n'
    )
    assert build_asset.runtime_dependencies(pyproject) == ["pydantic>=2,<3"]
    assert len(build_asset.runtime_dependencies(pyproject, with_boto3=True)) == 3


@pytest.fixture
def tiny_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    (root / "pyproject.toml").write_text('[project]\nname = "tiny"\ndependencies = []\n')
    return root


def test_a_change_to_a_package_file_rebuilds_and_nothing_else_does(tiny_project: Path) -> None:
    out = tiny_project.parent / "build" / "lambda"

    def build() -> build_asset.BuildResult:
        return build_asset.build(tiny_project, out, packages=("pkg",))

    first = build()
    assert first.rebuilt and (out / "pkg" / "__init__.py").read_text() == "VALUE = 1\n"
    (tiny_project / "pkg" / "__pycache__").mkdir()
    (tiny_project / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert not build().rebuilt

    (tiny_project / "pkg" / "__init__.py").write_text("VALUE = 2\n")
    second = build()
    assert second.rebuilt and second.input_hash != first.input_hash
    assert (out / "pkg" / "__init__.py").read_text() == "VALUE = 2\n"
    assert not (out / "pkg" / "__pycache__").exists()
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".lambda-")]
    assert leftovers == []
