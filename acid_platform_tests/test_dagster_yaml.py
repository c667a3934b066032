"""The Dagster instance files this repository ships (issue 33): the UI opens without the "Join
the Dagster community" dialog (``nux: enabled: false``), and telemetry is a documented choice.

Checked on every instance configuration a user starts from: the repository's ``dagster.yaml``
(``dagster dev`` / ``dg dev`` here, ``scripts/platform``), ``docker/dagster.yaml`` (the compose
deployment) and the one ``acid new`` writes into a new project. (``test_compose.py`` loads the
first into a real instance and checks ``instance.nux_enabled`` too.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

from acid_platform_tests.topology import ROOT

INSTANCE_FILES = [
    ROOT / "dagster.yaml",
    ROOT / "docker" / "dagster.yaml",
    ROOT / "acid_platform" / "cli" / "template" / "dagster.yaml",
]


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_community_dialog_and_telemetry_a_documented_choice(path: Path) -> None:
    text = path.read_text()
    config = yaml.safe_load(text)
    assert config["nux"] == {"enabled": False}
    assert isinstance(config["telemetry"]["enabled"], bool)
    lines = text.splitlines()
    at = lines.index("telemetry:")
    comment = " ".join(line for line in lines[max(0, at - 3) : at] if line.startswith("#"))
    assert "enabled: true" in comment and "telemetry" in comment.lower(), comment
