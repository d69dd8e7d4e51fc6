"""An emulated cluster: N nodes on this Linux machine, so that what crosses nodes runs here.

Each node is a network namespace with its own address, joined to the others by a bridge; each
rank runs in a UTS namespace with the node's host name. The MPIs then see N hosts: MPICH's hydra
and Open MPI's mpirun start one proxy or daemon per node through an "ssh" (a launcher script
that enters the node instead), MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups the ranks by
node, shared memory is used inside a node only, and messages between nodes go over TCP through
the bridge. Root only (namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN).

What one cluster NAME makes, all named with the prefix ``collkit-`` so that a cleanup finds it
after a crash (``collkit cluster cleanup``):

- network namespaces ``collkit-NAME-head`` (the bridge ``br0``, address .254: mpiexec runs
  there, like a login node) and ``collkit-NAME-n0`` ... (interface ``ck0``, addresses .1, .2, ...
  in 10.213.0.0/24, a veth pair to the bridge, optionally rate-limited by a tbf qdisc);
- ``/etc/netns/collkit-NAME-*/hosts`` and ``resolv.conf``, which ``ip netns exec`` mounts over
  /etc inside the namespace only: the host names resolve there, nowhere else;
- ``/run/collkit/NAME/``: ``cluster.json`` (the state), ``hosts`` (the host file collkit's
  ``--hosts`` takes) and ``agent`` (the launcher script).

Nothing is made in the machine's own network namespace: no interface, address or route, so no
traffic leaves the namespaces made here (there is no default route in them, and DNS has no server
to reach).

A host file whose first line is ``# collkit emulated cluster NAME`` makes ``collkit bench``,
``tune`` and ``run`` launch on that cluster (``launch_command`` below); rows record the nodes
and ranks per node in their ``allocation``. With ``slurm=True`` a real Slurm runs on the nodes
(collkit.slurm: munge, slurmctld on the head, a slurmd per node), its files in ``slurm/`` of the
state folder; ``down`` ends its daemons with the rest.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from collkit.errors import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:  # collkit.mpi.launch imports this module
    from collkit.mpi import MPI
    from collkit.slurm import Slurm

PREFIX = "collkit-"
STATE_ROOT = Path("/run/collkit")
NETNS_ETC = Path("/etc/netns")
SUBNET = "10.213.0"  # /24, inside the cluster's namespaces only
HEAD_ADDRESS = f"{SUBNET}.254"
BRIDGE, NODE_IF = "br0", "ck0"
MAX_NODES = 64
MARKER = "# collkit emulated cluster "
_NAME = re.compile(r"[a-z][a-z0-9]{0,11}")
# ASCII digits: \d alone takes any script's, and tc would not
_RATE = re.compile(
    r"([0-9]+(?:\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps)", re.IGNORECASE | re.ASCII
)
_RATE_BYTES = {
    "bit": 1 / 8,
    "kbit": 1e3 / 8,
    "mbit": 1e6 / 8,
    "gbit": 1e9 / 8,
    "tbit": 1e12 / 8,
    "bps": 1,
    "kbps": 1e3,
    "mbps": 1e6,
    "gbps": 1e9,
}


def root_reason() -> str:
    """Why this process cannot make a cluster ("" when it can): root and the tools."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "the emulated cluster needs root (network and UTS namespaces); run as root"
    missing = [t for t in ("ip", "unshare", "tc") if shutil.which(t) is None]
    if missing:
        return f"the emulated cluster needs {', '.join(missing)} (iproute2, util-linux)"
    return ""


def require_root() -> None:
    if why := root_reason():
        raise UnsupportedError(why)


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"cluster name '{name}' must be a lower-case letter and up to 11 letters or digits"
        )
    return name


def rate_bytes_per_s(rate: str) -> float:
    """tc's rate syntax (1gbit, 100mbit, 125mbps), checked: bytes per second."""
    m = _RATE.fullmatch(rate.strip())
    if not m or float(m.group(1)) <= 0:
        raise InvalidArgumentError(
            f"link rate '{rate}' must be a positive number and a unit: bit, kbit, mbit, gbit, "
            "tbit (bits/s) or bps, kbps, mbps, gbps (bytes/s), e.g. 1gbit"
        )
    return float(m.group(1)) * _RATE_BYTES[m.group(2).lower()]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and r.returncode != 0:
        raise UnsupportedError(f"ip {' '.join(args)} failed: {r.stderr.strip()}")
    return r


def _tc(ns: str, *args: str) -> None:
    r = subprocess.run(["ip", "netns", "exec", ns, "tc", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise UnsupportedError(f"tc {' '.join(args)} in {ns} failed: {r.stderr.strip()}")


def namespaces() -> list[str]:
    """Every network namespace whose name has collkit's prefix."""
    r = _ip("netns", "list", check=False)
    names = [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()]
    return sorted(n for n in names if n.startswith(PREFIX))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def shape_layout(np: int, nodes: int, available: int, where: str) -> tuple[int, int]:
    """(nodes, ranks per node) for `np` ranks on exactly `nodes` nodes of `available`: the
    shape tune measures (--nodes, --ppn); an error where it cannot be."""
    if nodes < 1 or np % nodes:
        raise InvalidArgumentError(
            f"-np {np} on {nodes} nodes: the shape needs a whole number of ranks on each node"
        )
    if nodes > available:
        raise InvalidArgumentError(f"{nodes} nodes: the {where} has {available}")
    return nodes, np // nodes


@dataclass
class Cluster:
    """One emulated cluster: `nodes` nodes named n0, n1, ...; `rate` limits each node's link."""

    name: str
    nodes: int
    rate: str = ""  # tc rate per node link and direction ("" = unlimited)
    owner_pid: int = 0  # a process whose end makes the cluster a leftover (0: none, until down)
    slurm: bool = False  # Slurm's daemons on it (collkit.slurm)

    # -- names ----------------------------------------------------------------------------------
    @property
    def head_ns(self) -> str:
        return f"{PREFIX}{self.name}-head"

    def node_ns(self, i: int) -> str:
        return f"{PREFIX}{self.name}-n{i}"

    @property
    def hostnames(self) -> list[str]:
        return [f"n{i}" for i in range(self.nodes)]

    def address(self, i: int) -> str:
        return f"{SUBNET}.{i + 1}"

    @property
    def state_dir(self) -> Path:
        return STATE_ROOT / self.name

    @property
    def hostfile(self) -> Path:
        return self.state_dir / "hosts"

    @property
    def agent(self) -> Path:
        return self.state_dir / "agent"

    def all_namespaces(self) -> list[str]:
        return [self.head_ns, *(self.node_ns(i) for i in range(self.nodes))]

    # -- up and down ----------------------------------------------------------------------------
    @classmethod
    def up(
        cls, name: str, nodes: int, rate: str = "", owner_pid: int = 0, slurm: bool = False
    ) -> Cluster:
        """Makes the cluster (with Slurm on it: slurm=True); on any failure removes what it
        made and raises."""
        check_name(name)
        if not 1 <= nodes <= MAX_NODES:
            raise InvalidArgumentError(f"--nodes {nodes} must be in 1..{MAX_NODES}")
        if rate:
            rate_bytes_per_s(rate)
        require_root()
        if slurm:
            from collkit.slurm import require_slurm

            require_slurm()
        c = cls(name=name, nodes=nodes, rate=rate, owner_pid=owner_pid, slurm=slurm)
        taken = [n for n in namespaces() if n.startswith(f"{PREFIX}{name}-")]
        if taken or c.state_dir.exists():
            raise InvalidArgumentError(
                f"cluster '{name}' is already up (or left over): `collkit cluster down {name}`"
            )
        try:
            c._make()
            if slurm:
                c.slurm_of().start()
        except BaseException:
            c.down()
            raise
        return c

    def _make(self) -> None:
        self.state_dir.mkdir(parents=True)
        # The state first: a cleanup running meanwhile sees whose the namespaces are.
        (self.state_dir / "cluster.json").write_text(json.dumps(asdict(self)) + "\n")
        hosts = "".join(
            [
                "127.0.0.1 localhost\n",
                f"{HEAD_ADDRESS} head\n",
                *(f"{self.address(i)} {h}\n" for i, h in enumerate(self.hostnames)),
            ]
        )
        for ns in self.all_namespaces():
            _ip("netns", "add", ns)
            etc = NETNS_ETC / ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts)
            # No name server: a name that is not in `hosts` fails at once, inside the namespace.
            (etc / "resolv.conf").write_text("# collkit emulated cluster: no DNS\n")
            _ip("-n", ns, "link", "set", "lo", "up")
        head = self.head_ns
        _ip("-n", head, "link", "add", BRIDGE, "type", "bridge")
        _ip("-n", head, "addr", "add", f"{HEAD_ADDRESS}/24", "dev", BRIDGE)
        _ip("-n", head, "link", "set", BRIDGE, "up")
        burst = 0
        if self.rate:  # a bucket of at least 2 ms at the rate (and >= 64 KiB: TSO segments)
            burst = max(int(rate_bytes_per_s(self.rate) * 0.002), 64 * 1024)
        for i in range(self.nodes):
            ns, port = self.node_ns(i), f"v{i}"
            # Made inside the head namespace with its peer in the node's: never in the host's.
            _ip("-n", head, "link", "add", port, "type", "veth",
                "peer", "name", NODE_IF, "netns", ns)  # fmt: skip
            _ip("-n", head, "link", "set", port, "master", BRIDGE, "up")
            _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", NODE_IF)
            _ip("-n", ns, "link", "set", NODE_IF, "up")
            if self.rate:  # both directions: the node's sending side and the bridge's
                for where, dev in ((ns, NODE_IF), (head, port)):
                    _tc(where, "qdisc", "add", "dev", dev, "root", "tbf", "rate", self.rate,
                        "burst", str(burst), "latency", "100ms")  # fmt: skip
        self._write_agent()
        self.hostfile.write_text(
            f"{MARKER}{self.name}: {self.nodes} nodes (collkit cluster up); collkit's --hosts "
            "adds the launcher settings\n" + "".join(f"{h}\n" for h in self.hostnames)
        )

    def slurm_of(self) -> Slurm:
        """Its Slurm (collkit.slurm): files, daemons, clients."""
        from collkit.slurm import Slurm

        return Slurm(self)

    def _write_agent(self) -> None:
        """The "ssh" the launchers call: `agent [options] HOST COMMAND...` runs COMMAND (one shell
        line, as ssh does) in HOST's network namespace under a UTS namespace named HOST."""
        cases = "|".join(self.hostnames)
        self.agent.write_text(
            "#!/bin/sh\n"
            f"# collkit emulated cluster {self.name}: the ssh of MPICH's hydra "
            "(-launcher-exec) and Open MPI (plm_rsh_agent)\n"
            'while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done\n'
            'case "$1" in\n'
            f"  {cases}) ;;\n"
            f"  *) echo \"collkit cluster {self.name}: no node '$1'\" >&2; exit 255 ;;\n"
            "esac\n"
            "host=$1; shift\n"
            f'exec ip netns exec "{PREFIX}{self.name}-$host" unshare --uts '
            'sh -c \'hostname "$0" && exec sh -c "$*"\' "$host" "$@"\n'
        )
        self.agent.chmod(0o755)

    def down(self) -> list[str]:
        """Ends the processes in its namespaces and removes everything it made; returns what it
        removed. Safe to call on a cluster made in part."""
        removed: list[str] = []
        mine = [n for n in namespaces() if n.startswith(f"{PREFIX}{self.name}-")]
        # Slurm's daemons run in the namespaces; their pid files name them too (a daemon that
        # left its namespace's process list by forking first still has its pid there).
        daemons = self.slurm_of().pids() if (self.state_dir / "slurm").is_dir() else []
        _end_processes(mine, daemons)
        for ns in mine:
            if _ip("netns", "del", ns, check=False).returncode == 0:
                removed.append(f"netns {ns}")
        for d in sorted(NETNS_ETC.glob(f"{PREFIX}{self.name}-*")):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(str(d))
        with contextlib.suppress(OSError):
            NETNS_ETC.rmdir()  # only if empty: other namespaces' files stay
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir, ignore_errors=True)
            removed.append(str(self.state_dir))
        return removed

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- state ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, name: str) -> Cluster:
        """The cluster NAME as `up` left it; UnsupportedError when it is not up."""
        check_name(name)
        path = STATE_ROOT / name / "cluster.json"
        try:
            d = json.loads(path.read_text())
            c = cls(**{k: d[k] for k in ("name", "nodes", "rate", "owner_pid")})
            c.slurm = d.get("slurm") is True
        except (OSError, ValueError, KeyError, TypeError):
            raise UnsupportedError(
                f"emulated cluster '{name}' is not up (no {path}): `collkit cluster up`"
            ) from None
        missing = [n for n in c.all_namespaces() if n not in namespaces()]
        if missing:
            raise UnsupportedError(
                f"emulated cluster '{name}' is broken (no namespace {missing[0]}): "
                f"`collkit cluster down {name}` and up again"
            )
        return c

    def leftover(self) -> bool:
        """Made for a process that has ended (a test run that crashed)."""
        return self.owner_pid > 0 and not _pid_alive(self.owner_pid)

    def describe(self) -> str:
        rate = f", links limited to {self.rate}" if self.rate else ""
        rate += ", Slurm" if self.slurm else ""
        own = f", owned by pid {self.owner_pid}" if self.owner_pid else ""
        return f"{self.name}: {self.nodes} nodes ({', '.join(self.hostnames)}){rate}{own}"

    # -- launching ------------------------------------------------------------------------------
    def layout(self, np: int, map_by: str = "", nodes: int | None = None) -> tuple[int, int, str]:
        """(nodes used, ranks per node at most, order) for `np` ranks spread over the nodes:
        as few ranks per node as fit, or on exactly `nodes` of them (np / nodes each: tune's
        shapes), nodes filled in turn ("contiguous"), or dealt one at a time with map_by "node"
        ("round_robin")."""
        if np < 1:
            raise InvalidArgumentError(f"-np {np} must be >= 1")
        order = "round_robin" if map_by == "node" else "contiguous"
        if nodes is not None:
            return (*shape_layout(np, nodes, self.nodes, f"emulated cluster {self.name}"), order)
        rpn = math.ceil(np / self.nodes)
        used = math.ceil(np / rpn)
        return used, rpn, order

    def allocation(self, np: int, nodes: int | None = None) -> str:
        """The rows' allocation: nodes and ranks per node, and that the nodes are emulated."""
        used, rpn, _ = self.layout(np, nodes=nodes)
        shape = (
            f"{used} node{'s' if used > 1 else ''} x {rpn} ranks"
            if used * rpn == np
            else f"{np} ranks on {used} nodes of up to {rpn}"
        )
        return f"{shape} (emulated cluster {self.name}: namespaces on 1 machine, shared cores)"

    def launch_command(
        self, mpi: MPI, np: int, program: list[str], map_by: str = "", nodes: int | None = None
    ) -> list[str]:
        """mpiexec in the head namespace, launching through the agent onto the nodes. The
        placement: nodes filled in turn, or round-robin with map_by "node"; no binding (the
        nodes share the machine's cores: two nodes binding rank 0 to core 0 would share it)."""
        from collkit.mpi import PLACEMENTS, Mpich, OpenMpi

        if map_by and map_by not in PLACEMENTS:
            raise InvalidArgumentError(
                f"placement '{map_by}' must be one of {', '.join(PLACEMENTS)}"
            )
        used, rpn, order = self.layout(np, map_by, nodes)
        names = self.hostnames[:used]
        head = [
            "ip", "netns", "exec", self.head_ns, "unshare", "--uts",
            "sh", "-c", 'hostname head && exec "$@"', "sh",
        ]  # fmt: skip
        if isinstance(mpi, Mpich):
            hosts = names if order == "round_robin" else [f"{h}:{rpn}" for h in names]
            args = [
                "-launcher", "ssh", "-launcher-exec", str(self.agent),
                "-hosts", ",".join(hosts), "-iface", BRIDGE,
            ]  # fmt: skip
        elif isinstance(mpi, OpenMpi):
            subnet = f"{SUBNET}.0/24"
            args = [
                "--mca", "plm_rsh_agent", str(self.agent),
                "--mca", "oob_tcp_if_include", subnet, "--mca", "btl_tcp_if_include", subnet,
                "--host", ",".join(f"{h}:{rpn}" for h in names),
                "--map-by", "node" if order == "round_robin" else "slot", "--bind-to", "none",
            ]  # fmt: skip
        else:
            raise UnsupportedError(
                f"the emulated cluster knows how to launch MPICH and Open MPI, not {mpi.version}"
            )
        return [*head, mpi.mpiexec, *mpi.launch_args, *args, "-n", str(np), *program]

    def launch_env(self, mpi: MPI) -> dict[str, str]:
        """Environment the ranks need to talk across the emulated nodes as across real ones.
        UCX (the pip MPICH's network module) tells machines apart by the kernel's boot id, not
        by host name, so by itself it would reach the other "nodes" through shared memory
        (sysv, cma): `^sm` leaves it TCP (and self), through the bridge. Open MPI's TCP and
        shared-memory components go by node, as the launcher told them."""
        from collkit.mpi import Mpich

        return {"UCX_TLS": "^sm"} if isinstance(mpi, Mpich) else {}

    def packets(self, node: int) -> tuple[int, int]:
        """Packets (from the node, to the node) through its link so far: what crossed the
        bridge."""
        r = _ip("-n", self.head_ns, "-j", "-s", "link", "show", f"v{node}")
        stats = json.loads(r.stdout)[0]["stats64"]
        return int(stats["rx"]["packets"]), int(stats["tx"]["packets"])

    def run(
        self, argv: list[str], node: int = 0, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Runs a command on one node (its namespace, its host name): for checks and tests."""
        cmd = [str(self.agent), self.hostnames[node], shlex.join(argv)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def from_hostfile(path: str | os.PathLike[str] | None) -> Cluster | None:
    """The emulated cluster a host file names on its first line, else None (a real host file).
    UnsupportedError when it names a cluster that is not up."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        return None
    if not first.startswith(MARKER):
        return None
    name = first[len(MARKER) :].split(":", 1)[0].strip()
    require_root()  # entering the nodes' namespaces needs it as much as making them
    return Cluster.load(name)


def clusters() -> list[Cluster]:
    """The clusters whose state is in /run/collkit (up, or left over by a crash)."""
    out = []
    if STATE_ROOT.is_dir():
        for d in sorted(STATE_ROOT.iterdir()):
            try:
                d2 = json.loads((d / "cluster.json").read_text())
                c = Cluster(**{k: d2[k] for k in ("name", "nodes", "rate", "owner_pid")})
                c.slurm = d2.get("slurm") is True
                out.append(c)
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return out


def cleanup(everything: bool = False) -> list[str]:
    """Removes leftovers: clusters whose owner process has ended, namespaces and files with
    collkit's prefix that belong to no cluster in /run/collkit, and (everything=True) every
    cluster. Returns what it removed. A cluster owned by a live process is kept."""
    require_root()
    removed: list[str] = []
    keep: set[str] = set()
    for c in clusters():
        if everything or c.leftover():
            removed += c.down()
        else:
            keep.add(c.name)
    orphans = [n for n in namespaces() if n[len(PREFIX) :].rsplit("-", 1)[0] not in keep]
    _end_processes(orphans)
    for ns in orphans:
        if _ip("netns", "del", ns, check=False).returncode == 0:
            removed.append(f"netns {ns}")
    for d in sorted(NETNS_ETC.glob(f"{PREFIX}*")):
        if d.name[len(PREFIX) :].rsplit("-", 1)[0] not in keep:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(str(d))
    if STATE_ROOT.is_dir():
        for d in sorted(STATE_ROOT.iterdir()):
            if d.name not in keep:
                shutil.rmtree(d, ignore_errors=True)
                removed.append(str(d))
    with contextlib.suppress(OSError):
        NETNS_ETC.rmdir()
    return removed


def _end_processes(nss: list[str], more: list[int] | None = None) -> None:
    """Ends the processes inside these namespaces (ranks, proxies: started through them), and
    `more`, by id: SIGTERM, then SIGKILL to what is left after a second."""
    pids: set[int] = set(more or [])
    for ns in nss:
        r = _ip("netns", "pids", ns, check=False)
        pids |= {int(p) for p in r.stdout.split() if p.isdigit()}
    pids.discard(os.getpid())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in pids if _pid_alive(p)]
        for p in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, sig)
        if not alive:
            return
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and any(_pid_alive(p) for p in alive):
            time.sleep(0.05)


@contextlib.contextmanager
def emulated(name: str, nodes: int, rate: str = "", slurm: bool = False) -> Iterator[Cluster]:
    """A cluster for the life of a `with` block (with Slurm on it: slurm=True), owned by this
    process (a crash leaves it to `cleanup`)."""
    c = Cluster.up(name, nodes, rate=rate, owner_pid=os.getpid(), slurm=slurm)
    try:
        yield c
    finally:
        c.down()
