"""Slurm: a real Slurm on an emulated cluster's nodes, and reading the allocation collkit runs in.

On an emulated cluster (collkit.cluster) ``collkit cluster up --slurm`` starts Debian's Slurm
(slurm-wlm) and munge as they run on a cluster: one ``munged`` and one ``slurmctld`` in the head
namespace (host name ``head``, like a login node), one ``slurmd`` per node in the node's
namespaces (``slurmd -N nI``, host name ``nI``), a partition ``collkit`` over the nodes. Every
file is in the cluster's state folder (``/run/collkit/NAME/slurm``): ``slurm.conf``, the munge
key and socket, spool, state, pid and log files; nothing is written to /etc. The clients
(srun, salloc, sbatch, squeue, sinfo, scontrol, scancel) reach slurmctld through the bridge
only, so ``slurm/bin`` holds wrappers that run them in the head namespace with SLURM_CONF set
(put the folder first on PATH). ``collkit cluster down`` ends every daemon with the cluster's
other processes (they all run in its namespaces) and removes the folder.

Inside an allocation (SLURM_JOB_ID set, here or on a real cluster) `allocation_of_env` reads
the nodes, tasks per node and node list that the launchers use for the ranks' shape
(collkit.mpi.launch).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from collkit.errors import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from collkit.cluster import Cluster

DAEMONS = ("munged", "slurmctld", "slurmscriptd", "slurmd", "slurmstepd")
CLIENTS = ("srun", "salloc", "sbatch", "squeue", "sinfo", "scontrol", "scancel")
PARTITION = "collkit"
# Each node's CPUs as Slurm is told them (SlurmdParameters=config_overrides: not checked
# against the machine): enough for --ntasks-per-node 4 on any machine, the cores shared.
CPUS_PER_NODE = 4
# Seconds between a job's SIGTERM and its SIGKILL at its time limit (Slurm's default is 30).
KILL_WAIT_S = 10
INSTALL = "apt-get install slurm-wlm munge"


def slurm_reason() -> str:
    """Why Slurm cannot be started on an emulated cluster here ("" when it can)."""
    from collkit.cluster import root_reason

    if why := root_reason():
        return why
    missing = [t for t in ("munged", "slurmctld", "slurmd", *CLIENTS) if find(t) is None]
    if missing:
        return f"Slurm needs {', '.join(missing)} ({INSTALL})"
    return ""


def find(tool: str) -> str | None:
    """The tool's path on PATH, passing over the wrappers of any cluster (a PATH that has one
    cluster's slurm/bin first must not give its wrapper to another cluster's)."""
    from collkit.cluster import STATE_ROOT

    dirs = [
        d
        for d in os.environ.get("PATH", os.defpath).split(os.pathsep)
        if d and not Path(d).resolve().is_relative_to(STATE_ROOT)
    ]
    return shutil.which(tool, path=os.pathsep.join(dirs))


def installed(tool: str) -> str:
    return find(tool) or tool


def require_slurm() -> None:
    if why := slurm_reason():
        raise UnsupportedError(why)


@dataclass
class Slurm:
    """The Slurm of one emulated cluster: its files and daemons."""

    cluster: Cluster

    @property
    def dir(self) -> Path:
        return self.cluster.state_dir / "slurm"

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def bin(self) -> Path:
        """The clients' wrappers: first on PATH, `srun` and the others reach this cluster."""
        return self.dir / "bin"

    @property
    def munge_socket(self) -> Path:
        return self.dir / "munge" / "munge.socket"

    @property
    def cluster_name(self) -> str:
        """Slurm's ClusterName, also the jobs' SLURM_CLUSTER_NAME: how collkit knows a job runs
        on an emulated cluster."""
        return f"collkit{self.cluster.name}"

    def env(self) -> dict[str, str]:
        """What a client needs: SLURM_CONF, and the wrappers first on PATH."""
        path = os.environ.get("PATH", "/usr/bin:/bin")
        return {"SLURM_CONF": str(self.conf), "PATH": f"{self.bin}:{path}"}

    # -- files ----------------------------------------------------------------------------------
    def config_text(self) -> str:
        c, d = self.cluster, self.dir
        from collkit.cluster import HEAD_ADDRESS

        nodes = "".join(
            f"NodeName={h} NodeHostname={h} NodeAddr={c.address(i)} CPUs={CPUS_PER_NODE} "
            f"Sockets=1 CoresPerSocket={CPUS_PER_NODE} ThreadsPerCore=1 RealMemory=1000 "
            "State=UNKNOWN\n"
            for i, h in enumerate(c.hostnames)
        )
        return (
            f"# collkit emulated cluster {c.name}: written by `collkit cluster up --slurm`\n"
            f"ClusterName={self.cluster_name}\n"
            f"SlurmctldHost=head({HEAD_ADDRESS})\n"
            "SlurmctldPort=6817\nSlurmdPort=6818\n"
            "AuthType=auth/munge\nCredType=cred/munge\n"
            f"AuthInfo=socket={self.munge_socket}\n"
            "SlurmUser=root\nSlurmdUser=root\n"
            f"StateSaveLocation={d / 'ctld'}\n"
            f"SlurmdSpoolDir={d / 'spool'}/%n\n"
            f"SlurmctldPidFile={d / 'slurmctld.pid'}\n"
            f"SlurmdPidFile={d / 'slurmd-%n.pid'}\n"
            f"SlurmctldLogFile={d / 'slurmctld.log'}\n"
            f"SlurmdLogFile={d / 'slurmd-%n.log'}\n"
            f"PlugStackConfig={d / 'plugstack.conf'}\n"
            # A /tmp of each node's own: the nodes share the machine's, where PMIx's steps of
            # two nodes would make the same folder (and fail: "File exists").
            f"TmpFS={d / 'tmp'}/%n\n"
            # No cgroups: the nodes share the machine's, and a container may have none.
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
            "JobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n"
            "SchedulerType=sched/backfill\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
            "SlurmdParameters=config_overrides\n"
            "MpiDefault=none\nReturnToService=2\n"
            f"KillWait={KILL_WAIT_S}\nInactiveLimit=0\nMinJobAge=60\n"
            "SlurmctldTimeout=30\nSlurmdTimeout=60\n"
            "SlurmctldDebug=info\nSlurmdDebug=info\n"
            f"{nodes}"
            f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
        )

    def _write_files(self) -> None:
        d = self.dir
        for sub in (
            "ctld",
            "munge",
            "bin",
            "cgroup",
            *(f"{sub}/{h}" for sub in ("spool", "tmp") for h in self.cluster.hostnames),
        ):
            (d / sub).mkdir(parents=True, exist_ok=True)
        # Made readable by root alone (munged refuses a key others can read).
        fd = os.open(d / "munge" / "munge.key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(1024))
        self.conf.write_text(self.config_text())
        (d / "plugstack.conf").write_text("# no SPANK plugins\n")
        # slurmd loads a cgroup plugin whatever its other plugins: `ip netns exec` mounts a
        # sysfs of the namespace, with nothing on /sys/fs/cgroup, so it is pointed at an empty
        # folder (the plugins that would use it are off: linuxproc, task/none).
        (d / "cgroup.conf").write_text(
            f"CgroupPlugin=cgroup/v1\nCgroupMountpoint={d / 'cgroup'}\nCgroupAutomount=no\n"
        )
        head = self.cluster.head_ns
        for tool in CLIENTS:
            real = installed(tool)
            w = self.bin / tool
            # Inside any of the cluster's namespaces (a job, an salloc shell) the client runs
            # as it is; from outside it enters the head namespace, where slurmctld is reached.
            w.write_text(
                "#!/bin/sh\n"
                f"# collkit emulated cluster {self.cluster.name}: Slurm's {tool} on its head\n"
                f"export SLURM_CONF={self.conf}\n"
                'case "$(ip netns identify $$ 2>/dev/null)" in\n'
                f'  {namespace_prefix(self.cluster)}*) exec {real} "$@" ;;\n'
                "esac\n"
                f"exec ip netns exec {head} unshare --uts sh -c 'hostname head && exec \"$@\"' "
                f'sh {real} "$@"\n'
            )
            w.chmod(0o755)

    # -- daemons --------------------------------------------------------------------------------
    def _in_head(self, argv: list[str]) -> list[str]:
        return [
            "ip", "netns", "exec", self.cluster.head_ns, "unshare", "--uts",
            "sh", "-c", 'hostname head && exec "$@"', "sh", *argv,
        ]  # fmt: skip

    def _start(self, what: str, cmd: list[str]) -> None:
        env = dict(os.environ, SLURM_CONF=str(self.conf))
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)
        if r.returncode != 0:
            raise UnsupportedError(
                f"could not start {what} (exit {r.returncode}): {(r.stderr or r.stdout)[-600:]}"
                f"; its log: {self.dir}"
            )

    def start(self, timeout: float = 90) -> None:
        """Writes the files and starts munged, slurmctld and one slurmd per node; returns when
        every node is idle in the partition (UnsupportedError, with the logs' ends, if not)."""
        require_slurm()
        self._write_files()
        d = self.dir
        munge = [
            installed("munged"), "--force",
            f"--socket={self.munge_socket}", f"--key-file={d / 'munge' / 'munge.key'}",
            f"--pid-file={d / 'munge' / 'munged.pid'}", f"--log-file={d / 'munge' / 'munged.log'}",
            f"--seed-file={d / 'munge' / 'munged.seed'}",
        ]  # fmt: skip
        self._start("munged", self._in_head(munge))
        ctld = [installed("slurmctld"), "-f", str(self.conf), "-i"]
        self._start("slurmctld", self._in_head(ctld))
        slurmd = installed("slurmd")
        for h in self.cluster.hostnames:
            # The agent: the node's namespace and host name, as every rank on it gets them.
            self._start(
                f"slurmd on {h}",
                [str(self.cluster.agent), h, f"{slurmd} -f {self.conf} -N {h}"],
            )
        self.wait_idle(timeout)

    def client(self, argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Runs a Slurm client command (sinfo, squeue, ...) through its wrapper."""
        cmd = [str(self.bin / argv[0]), *argv[1:]]
        env = dict(os.environ, **self.env())
        return subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False
        )

    def node_states(self) -> dict[str, str]:
        r = self.client(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=30)
        out: dict[str, str] = {}
        for ln in r.stdout.splitlines():
            parts = ln.split()
            if len(parts) == 2:
                out[parts[0]] = parts[1]
        return out

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                states = self.node_states()
            if len(states) == self.cluster.nodes and all(
                s.rstrip("*") in ("idle", "mixed", "allocated") for s in states.values()
            ):
                return
            time.sleep(0.5)
        logs = ""
        for log in sorted(self.dir.glob("*.log")):
            with contextlib.suppress(OSError):
                logs += f"\n--- {log.name}:\n" + "\n".join(log.read_text().splitlines()[-5:])
        raise UnsupportedError(
            f"Slurm on cluster {self.cluster.name}: the nodes did not come up in {timeout:.0f} "
            f"s (sinfo: {states or 'no answer'}){logs}"
        )

    def pids(self) -> list[int]:
        """The daemons' process ids from their pid files: those still running one of the
        daemons (a pid taken since by another program is left alone)."""
        out = []
        for f in [*self.dir.glob("*.pid"), *self.dir.glob("munge/*.pid")]:
            with contextlib.suppress(OSError, ValueError, IndexError):
                pid = int(f.read_text().split()[0])
                if pid > 0 and Path(f"/proc/{pid}/comm").read_text().strip() in DAEMONS:
                    out.append(pid)
        return out


def namespace_prefix(c: Cluster) -> str:
    """The common prefix of the cluster's namespaces (a shell `case` pattern's)."""
    from collkit.cluster import PREFIX

    return f"{PREFIX}{c.name}-"


def daemon_processes() -> list[tuple[int, str]]:
    """Every process of Slurm's or munge's daemons on this machine (pid, name), whoever
    started it: what a teardown must leave none of."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            comm = (p / "comm").read_text().strip()
            if comm in DAEMONS or comm.startswith("slurmstepd"):
                out.append((int(p.name), comm))
    return sorted(out)


# -- the allocation collkit runs in ------------------------------------------------------------

_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?", re.ASCII)
_TASKS = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?", re.ASCII)
MAX_HOSTS = 1 << 20


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host list syntax (SLURM_JOB_NODELIST): ``n[0-3,7],login1,r[01-02]c[1-2]``, zero
    padding kept, as `scontrol show hostnames` expands it. InvalidArgumentError otherwise."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"host list must be a str, not {type(text).__name__}")
    items: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise InvalidArgumentError(f"host list '{text[:80]}': nested '[' at {i}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InvalidArgumentError(f"host list '{text[:80]}': ']' without '[' at {i}")
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise InvalidArgumentError(f"host list '{text[:80]}': '[' not closed")
    items.append(text[start:])
    hosts: list[str] = []
    for item in items:
        hosts += _expand_one(text, item)
        if len(hosts) > MAX_HOSTS:
            raise InvalidArgumentError(f"host list '{text[:80]}': more than {MAX_HOSTS} hosts")
    return hosts


def _expand_one(text: str, item: str) -> list[str]:
    if not item:
        raise InvalidArgumentError(f"host list '{text[:80]}': an empty host name")
    m = re.fullmatch(r"([^\[\]]*)\[([^\[\]]*)\](.*)", item)
    if not m:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", item, re.ASCII):
            raise InvalidArgumentError(f"host list '{text[:80]}': bad host name '{item[:40]}'")
        return [item]
    prefix, ranges, rest = m.groups()
    if prefix and not re.fullmatch(r"[A-Za-z0-9._-]+", prefix, re.ASCII):
        raise InvalidArgumentError(f"host list '{text[:80]}': bad host name '{prefix[:40]}'")
    tails = _expand_one(text, rest) if rest else [""]
    out: list[str] = []
    for part in ranges.split(","):
        r = _RANGE.fullmatch(part)
        if not r:
            raise InvalidArgumentError(
                f"host list '{text[:80]}': '[{ranges[:40]}]' must be numbers and ranges (0-3)"
            )
        lo, hi = r.group(1), r.group(2) if r.group(2) is not None else r.group(1)
        if int(hi) < int(lo) or int(hi) - int(lo) >= MAX_HOSTS:
            raise InvalidArgumentError(f"host list '{text[:80]}': bad range '{part[:40]}'")
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        for n in range(int(lo), int(hi) + 1):
            out += [f"{prefix}{n:0{width}d}{t}" for t in tails]
            if len(out) > MAX_HOSTS:
                raise InvalidArgumentError(f"host list '{text[:80]}': more than {MAX_HOSTS}")
    return out


def expand_tasks_per_node(text: str) -> list[int]:
    """SLURM_TASKS_PER_NODE (``2(x3),1``): the tasks on each node, in node order."""
    out: list[int] = []
    for part in text.split(","):
        m = _TASKS.fullmatch(part.strip())
        if not m or int(m.group(1)) < 1 or (m.group(2) is not None and int(m.group(2)) < 1):
            raise InvalidArgumentError(
                f"SLURM_TASKS_PER_NODE '{text[:80]}' must be counts like 2(x3),1"
            )
        reps = int(m.group(2) or 1)
        if len(out) + reps > MAX_HOSTS:
            raise InvalidArgumentError(f"SLURM_TASKS_PER_NODE '{text[:80]}': too many nodes")
        out += [int(m.group(1))] * reps
    return out


@dataclass(frozen=True)
class Allocation:
    """A Slurm allocation as its job's environment says it."""

    job_id: str
    hosts: list[str]  # SLURM_JOB_NODELIST, expanded
    tasks_per_node: list[int]  # SLURM_TASKS_PER_NODE, expanded (one per host)
    cluster_name: str = ""  # SLURM_CLUSTER_NAME

    @property
    def nodes(self) -> int:
        return len(self.hosts)

    @property
    def tasks(self) -> int:
        return sum(self.tasks_per_node)

    def emulated(self) -> Cluster | None:
        """The emulated cluster this job runs on (its ClusterName says it), else None."""
        from collkit.cluster import Cluster

        if not self.cluster_name.startswith("collkit"):
            return None
        try:
            return Cluster.load(self.cluster_name[len("collkit") :])
        except (UnsupportedError, InvalidArgumentError):
            return None

    def layout(self, np: int, nodes: int | None = None) -> tuple[int, int]:
        """(nodes used, ranks per node at most) for `np` ranks: as few per node as fit, the
        allocation's nodes filled in turn, or on exactly `nodes` of them (np / nodes each:
        tune's shapes); an error if the allocation has too few tasks."""
        if np < 1:
            raise InvalidArgumentError(f"-np {np} must be >= 1")
        if nodes is not None:
            from collkit.cluster import shape_layout

            used, rpn = shape_layout(np, nodes, self.nodes, f"Slurm allocation (job {self.job_id})")
            if any(t < rpn for t in self.tasks_per_node[:used]):
                raise InvalidArgumentError(
                    f"-np {np} on {nodes} nodes: {rpn} ranks per node, and the Slurm allocation "
                    f"(job {self.job_id}) has {describe_tasks(self.tasks_per_node)} tasks"
                )
            return used, rpn
        if np > self.tasks:
            raise InvalidArgumentError(
                f"-np {np}: the Slurm allocation (job {self.job_id}) has {self.tasks} tasks on "
                f"{self.nodes} nodes ({describe_tasks(self.tasks_per_node)}): ask salloc/sbatch "
                "for more (-N, --ntasks-per-node) or lower -np"
            )
        rpn = -(-np // self.nodes)
        # A node with fewer tasks than that: fill the nodes in turn up to their own counts.
        if any(t < rpn for t in self.tasks_per_node[: -(-np // rpn)]):
            rpn = max(self.tasks_per_node)
        used = -(-np // rpn)
        return used, rpn

    def shape(self, np: int, nodes: int | None = None) -> str:
        used, rpn = self.layout(np, nodes)
        if used * rpn == np:
            return f"{used} node{'s' if used > 1 else ''} x {rpn} ranks"
        return f"{np} ranks on {used} nodes of up to {rpn}"


def describe_tasks(tasks: list[int]) -> str:
    if tasks and all(t == tasks[0] for t in tasks):
        return f"{tasks[0]} per node"
    return ", ".join(map(str, tasks[:8])) + (" ..." if len(tasks) > 8 else "")


def allocation_of_env(env: Mapping[str, str] | None = None) -> Allocation | None:
    """The Slurm allocation this process runs in (SLURM_JOB_ID, SLURM_JOB_NODELIST,
    SLURM_TASKS_PER_NODE or SLURM_NTASKS_PER_NODE), else None. InvalidArgumentError for
    variables that do not parse."""
    e = os.environ if env is None else env
    job = e.get("SLURM_JOB_ID") or e.get("SLURM_JOBID")
    if not job:
        return None
    nodelist = e.get("SLURM_JOB_NODELIST") or e.get("SLURM_NODELIST") or ""
    if not nodelist:
        raise InvalidArgumentError(
            f"Slurm job {job}: SLURM_JOB_NODELIST is not set: run collkit in the job's own "
            "environment (salloc, sbatch)"
        )
    hosts = expand_hostlist(nodelist)
    per = e.get("SLURM_TASKS_PER_NODE", "")
    if per:
        tasks = expand_tasks_per_node(per)
    elif e.get("SLURM_NTASKS_PER_NODE"):
        tasks = expand_tasks_per_node(e["SLURM_NTASKS_PER_NODE"]) * len(hosts)
    else:
        tasks = [1] * len(hosts)
    if len(tasks) != len(hosts):
        raise InvalidArgumentError(
            f"Slurm job {job}: SLURM_TASKS_PER_NODE '{per[:80]}' gives {len(tasks)} nodes, "
            f"SLURM_JOB_NODELIST '{nodelist[:80]}' {len(hosts)}"
        )
    return Allocation(job, hosts, tasks, e.get("SLURM_CLUSTER_NAME", ""))


def default_np(hosts: str | None = None, env: Mapping[str, str] | None = None) -> int | None:
    """The rank count bench, tune and run take when no -np is given: inside a Slurm allocation
    without --hosts, its task count (SLURM_NTASKS, else the tasks of SLURM_TASKS_PER_NODE), as
    srun does; None elsewhere (each command's own default)."""
    e = os.environ if env is None else env
    if hosts:
        return None
    alloc = allocation_of_env(e)
    if alloc is None:
        return None
    text = (e.get("SLURM_NTASKS") or e.get("SLURM_NPROCS") or "").strip()
    if not text:
        return alloc.tasks
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise InvalidArgumentError(
            f"Slurm job {alloc.job_id}: SLURM_NTASKS '{text[:40]}' is not a positive integer"
        )
    return int(text)


def machine_of_env(env: Mapping[str, str] | None = None) -> str | None:
    """The machine a Slurm job's rows name, the same whichever of its nodes collkit runs on and
    in whichever job: "slurm:" and the cluster (SLURM_CLUSTER_NAME), else the nodes' common name
    prefix without its digits ("slurm:nid" for nid[0001-0004]), else the first node of the
    sorted list; one word (calibrate names its files by it); None outside a job."""
    alloc = allocation_of_env(env)
    if alloc is None:
        return None
    if alloc.cluster_name:
        return f"slurm:{alloc.cluster_name.split()[0]}"
    hosts = sorted(alloc.hosts)
    prefix = hosts[0][
        : next(
            (i for i, ch in enumerate(hosts[0]) if any(i >= len(h) or h[i] != ch for h in hosts)),
            len(hosts[0]),
        )
    ].rstrip("0123456789-_.")
    return f"slurm:{prefix or hosts[0]}"
