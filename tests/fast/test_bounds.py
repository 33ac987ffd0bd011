"""Bounds on what a user gives, checked before any work: every argument Click refuses is
one line like any other error, an empty argument is refused, and the Kubernetes options are
checked against what the API server takes before a manifest is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import assert_one_line_error, oltplab

SPEC = Path(__file__).parent.parent.parent / "examples" / "quick.toml"


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["run"], ["oltplab run: Missing argument 'SPEC'", "see `oltplab run --help`"]),
        (["plan", str(SPEC), "--shards", "x"], ["oltplab plan: Invalid value for '--shards'"]),
        (["plan", str(SPEC), "--shards", "0"], ["--shards", "greater than or equal to 1"]),
        (["status", "--colour"], ["No such option: --colour"]),
        (["bogus"], ["oltplab: No such command 'bogus'"]),
        (["run", str(SPEC), "-r", ""], ["an empty argument after `-r`: give a value"]),
        (["export", "", "-o", "x.csv"], ["an empty argument after `export`"]),
        (["calibrate", "x", "--seconds", "99999999"], ["'--seconds'", "less than or equal"]),
        (["calibrate", "x", "--threads", "0"], ["'--threads'", "greater than or equal to 1"]),
        (["bisect", "--good", "a", "--bad", "b", "--max-repetitions", "10000"], ["less than"]),
        (["replay", "x", "--min-seconds", "1000000000"], ["'--min-seconds'", "less than"]),
        (["report", "x", "--margin", "-5"], ["--margin -5: expected a percentage above 0"]),
    ],
)
def test_argument_errors_are_one_line(tmp_path: Path, arguments, fragments) -> None:
    assert_one_line_error(oltplab(*arguments, cwd=tmp_path), *fragments)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--cpu", "-4", "--cpu '-4': expected a positive quantity of cores"),
        ("--cpu", "0", "--cpu '0': a pod must ask for more than nothing"),
        ("--memory", "lots", "--memory 'lots': expected a positive quantity of bytes"),
        ("--namespace", "Bench", "--namespace 'Bench': expected lower-case letters"),
        ("--namespace", "a\nb", "--namespace 'a\\nb': expected lower-case letters"),
        ("--image", " ", "an empty argument after `--image`"),
        ("--image", "oltplab latest", "--image 'oltplab latest': expected an image reference"),
        ("--node-selector", "role=a b", "--node-selector 'a b': expected a label value"),
        ("--storage", 'pvc"', "--storage 'pvc\"': expected a PersistentVolumeClaim's name"),
        ("--storage", "Results", "--storage 'Results': expected a PersistentVolumeClaim's name"),
    ],
)
def test_kubernetes_options_are_checked_before_a_manifest_is_written(
    tmp_path: Path, option: str, value: str, expected: str
) -> None:
    given = {"--image": "registry.example/oltplab:1", option: value}
    arguments = [item for pair in given.items() for item in pair]
    result = oltplab(
        "submit", "k8s", str(SPEC), "--shards", "2", "--storage", "results", *arguments,
        "--dry-run", "--results", "run", cwd=tmp_path,
    )  # fmt: skip
    assert_one_line_error(result, expected)
    assert not (tmp_path / "run").exists()
