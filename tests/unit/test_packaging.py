"""The project's packaging metadata builds without deprecation warnings: the
license is an SPDX expression (a TOML table is deprecated since setuptools
77, which prints a boxed warning on every build, e.g. the first `make run`),
and the build asks for a setuptools that reads it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def test_the_license_is_an_spdx_expression_and_the_build_backend_reads_it() -> None:
    project = tomllib.loads(PYPROJECT.read_text("utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    [setuptools] = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools)
    assert found is not None and int(found.group(1)) >= 77, setuptools
