"""Inside a Slurm allocation: -np defaults to the job's task count for bench, tune and run (no
--hosts, no -np given), and the rows' machine is the cluster's, whichever node collkit runs on."""

from __future__ import annotations

import argparse

import pytest

from collkit import slurm
from collkit.bench import machine_name
from collkit.cli._common import default_np
from collkit.errors import InvalidArgumentError

JOB = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "nid[0003-0004]", "SLURM_TASKS_PER_NODE": "2(x2)"}


def test_default_np_is_the_jobs_task_count() -> None:
    assert slurm.default_np(env={**JOB, "SLURM_NTASKS": "3"}) == 3
    assert slurm.default_np(env=JOB) == 4  # no SLURM_NTASKS: the tasks per node, added
    assert slurm.default_np(env={}) is None  # not in a job
    assert slurm.default_np("hosts.txt", env=JOB) is None  # --hosts: the host file's
    with pytest.raises(InvalidArgumentError, match="SLURM_NTASKS 'x' is not a positive"):
        slurm.default_np(env={**JOB, "SLURM_NTASKS": "x"})


def test_commands_take_it_where_no_np_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [*JOB, "SLURM_NTASKS", "SLURM_CLUSTER_NAME"]:
        monkeypatch.delenv(k, raising=False)
    args = argparse.Namespace(P=None, hosts=None)
    default_np(args, 4, lists=True)
    assert args.P == [4]  # outside a job: the command's own default
    for k, v in {**JOB, "SLURM_NTASKS": "2"}.items():
        monkeypatch.setenv(k, v)
    args = argparse.Namespace(P=None, hosts=None)
    default_np(args, 4, lists=True)
    assert args.P == [2]
    args = argparse.Namespace(P=None, hosts=None)
    default_np(args, 0, lists=False)
    assert args.P == 2
    args = argparse.Namespace(P=[8], hosts=None)
    default_np(args, 4, lists=True)
    assert args.P == [8]  # -np given: kept


def test_machine_in_a_job_does_not_depend_on_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    assert slurm.machine_of_env({}) is None
    assert slurm.machine_of_env({**JOB, "SLURM_CLUSTER_NAME": "perlmutter"}) == "slurm:perlmutter"
    assert slurm.machine_of_env(JOB) == "slurm:nid"
    other = dict(JOB, SLURM_JOB_NODELIST="nid[0004,0003]", SLURM_TASKS_PER_NODE="2,2")
    assert slurm.machine_of_env(other) == "slurm:nid"
    odd = dict(JOB, SLURM_JOB_NODELIST="alpha,beta", SLURM_TASKS_PER_NODE="1,1")
    assert slurm.machine_of_env(odd) == "slurm:alpha"  # no common prefix: the first, sorted
    for k, v in {**JOB, "SLURM_CLUSTER_NAME": "collkitc1"}.items():
        monkeypatch.setenv(k, v)
    assert machine_name().startswith("slurm:collkitc1 (")
