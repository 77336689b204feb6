"""The scripts in examples/ run end to end with a few hundred bodies and write a non-empty PNG."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")

# Each with the fewest bodies and steps that still exercise every part of the script.
CASES = {
    "galaxy": ["--n", "512", "--t-end", "0.25"],
    "merger": ["--n", "512", "--t-end", "0.5"],
    "accuracy": ["--n", "512"],
    "cluster": ["--n", "256", "--t-end", "0.25"],
    "cosmo_power": ["--n-grid", "16", "--a-end", "0.03", "--dlna", "0.25"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_writes_a_png(name, tmp_path):
    out = tmp_path / f"{name}.png"
    script = os.path.join(EXAMPLES, f"{name}.py")
    run = subprocess.run([sys.executable, script, "--out", str(out)] + CASES[name], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, MPLBACKEND="Agg"))
    assert run.returncode == 0, run.stderr
    assert out.stat().st_size > 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {out}" in run.stdout
