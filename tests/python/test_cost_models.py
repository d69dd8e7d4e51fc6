"""Cost models said once: the Python API and every command (simulate, tune --simulate,
calibrate's profiles, validate) take the models the core registers (core/src/sim/models/, one
file each) with their parameters, from the core's registry; nothing in Python lists them again.
So a model file added to the core is in every one of them; core/tests/test_sim.cpp compiles a
test model into the C++ unit tests' build and runs it, core/tests/test_model_registry.cpp checks
the registry refuses a model whose parameters clash with another's."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_profile import make

import collkit
from collkit import _core
from collkit.calibrate_executor import FREE_PARAMS
from collkit.cli import build_parser, main
from collkit.errors import InvalidArgumentError
from collkit.profile import SIM_MODELS
from collkit.results import Row
from collkit.simulate import LOCAL_PARAMS, MODELS, Model, rank_memory_bytes
from collkit.validate import validate_rows

REGISTERED = [str(m["name"]).replace("_", "-") for m in _core.models()]


def test_the_registry_has_no_problems() -> None:
    # A model file that declares a shared parameter unlike another model (its unit, default or
    # meaning) or takes another's name is listed here: this fails, the import does not.
    assert _core.model_problems() == []


def test_each_parameter_is_described_once_and_used_as_declared() -> None:
    params = {str(p["name"]): p for p in _core.model_params()}
    assert len(params) == len(_core.model_params())
    declared = {str(m["name"]): set(m["params"]) for m in _core.models()}
    for name, p in params.items():
        if p["local"]:
            assert set(p["models"]) == set(declared)
            assert not any(name in ps for ps in declared.values())
        else:
            assert {m for m, ps in declared.items() if name in ps} == set(p["models"])
    assert all(k in params for ps in declared.values() for k in ps)


def _choices(command: str, flag: str) -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if flag in a.option_strings)
    return list(action.choices or [])


def test_every_list_of_models_is_the_registry() -> None:
    assert len(REGISTERED) >= 5
    assert list(MODELS) == REGISTERED
    assert list(SIM_MODELS) == REGISTERED
    assert list(FREE_PARAMS) == REGISTERED
    assert _choices("simulate", "--model") == REGISTERED
    assert _choices("validate", "--model") == REGISTERED


@pytest.mark.parametrize("model", REGISTERED)
def test_every_registered_model_runs_through_every_command(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The Python API, with the model's defaults and its own parameters.
    m = Model.make(model)
    assert set(m.params) == set(MODELS[model]) | set(LOCAL_PARAMS)
    r = collkit.simulate("allreduce:rd", P=4, bytes=64, model=model)
    assert r.makespan > 0
    # Its rules decide the simulator's memory per rank, as the core says.
    rules = {str(x["name"]).replace("_", "-"): x["rules"] for x in _core.models()}
    postal_like = rank_memory_bytes(model) == rank_memory_bytes("postal")
    assert postal_like == (rules[model] == "port")
    # simulate and tune --simulate.
    assert main(["simulate", "allreduce:rd", "-P", "4", "--bytes", "64", "--model", model]) == 0
    out = tmp_path / "t"
    tune = ["tune", "allreduce", "-P", "4", "--sizes", "8", "--only", "rd,ring"]
    assert main([*tune, "--simulate", model, "-o", str(out), "--no-plot"]) == 0, (
        capsys.readouterr().err
    )
    assert (out / "collkit-tuning.json").is_file()
    # A profile fitted by calibrate gives the model's parameters (the kernel measures all of
    # the registered models' parameters), and validate predicts with them.
    p = make()
    ps = p.params(model)
    assert set(ps) == set(MODELS[model]) | set(LOCAL_PARAMS)
    assert collkit.simulate("allreduce:rd", P=2, bytes=64, model=model, **ps).makespan > 0
    rows = []
    for nbytes in (64, 4096):
        row = Row(
            collective="allreduce",
            algorithm="allreduce:rd",
            P=2,
            bytes=nbytes,
            datatype="double",
            count=nbytes // 8,
            source="measured",
            mpi="MPICH x",
            machine="m",
            iterations=20,
        )
        row.min_us, row.median_us = 5.0, 6.0
        rows.append(row)
    v = validate_rows(p, rows, model=model)
    assert v.model == model
    assert all(not c.error and c.predicted_min is not None for c in v.cases)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=20))
def test_a_name_no_model_has_is_a_clear_error(name: str) -> None:
    key = name.replace("_", "-").lower()
    if key in MODELS:
        assert Model.make(name).name == key
        return
    with pytest.raises(InvalidArgumentError, match="unknown model"):
        Model.make(name)
    with pytest.raises(InvalidArgumentError, match="unknown model"):
        make().params(name)


# A model the core registered that no Python file knows: the core's registry seen through a
# stand-in for its two lists, before collkit is imported.
_NEW_MODEL = """
import glob, importlib.machinery, importlib.util, os, sys
spec = importlib.util.find_spec("collkit")
so = [f for d in spec.submodule_search_locations for f in glob.glob(os.path.join(d, "_core*.so"))]
core = importlib.machinery.ExtensionFileLoader("collkit._core", so[0]).load_module()
real_models, real_params = core.models, core.model_params
def models():
    return real_models() + [{"name": "test_hop", "aliases": [], "doc": "alpha + n beta",
                             "params": ["alpha", "beta"], "rules": "port"}]
def model_params():
    ps = real_params()
    for p in ps:
        if p["name"] in ("alpha", "beta") or p["local"]:
            p["models"].append("test_hop")
    return ps
core.models, core.model_params = models, model_params
sys.modules["collkit._core"] = core
import argparse
from collkit.calibrate_executor import FREE_PARAMS
from collkit.cli import build_parser
from collkit.profile import SIM_MODELS
from collkit.simulate import MODELS
from test_profile import make
sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
choices = {c: next(a for a in sub.choices[c]._actions if "--model" in a.option_strings).choices
           for c in ("simulate", "validate")}
p = make()
print(SIM_MODELS[-1], list(MODELS)[-1], list(FREE_PARAMS)[-1], choices["simulate"][-1],
      choices["validate"][-1], p.params("test-hop")["alpha"] == p.params("postal")["alpha"])
"""


def test_a_model_only_the_core_knows_is_in_every_list() -> None:
    import subprocess
    import sys

    here = Path(__file__).parent
    env = {**__import__("os").environ, "PYTHONPATH": str(here)}
    r = subprocess.run(
        [sys.executable, "-c", _NEW_MODEL],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["test-hop"] * 5 + ["True"]
