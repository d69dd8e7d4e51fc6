"""Nodes on this machine, to run what crosses nodes: an emulated cluster (root only).

  collkit cluster up --nodes 2                  n0, n1: network namespaces on a bridge
  collkit cluster up --nodes 3 --rate 1gbit     each node's link limited to 1 Gbit/s (tc tbf)
  collkit cluster up --nodes 2 --slurm          and a Slurm on them: slurmctld, a slurmd per node
  collkit bench allreduce -np 2,4 --algos hier,rd,native --hosts /run/collkit/ck/hosts
  collkit cluster status                        what is up, and leftovers of a crash
  collkit cluster down                          everything removed (cleanup: leftovers too)

Each node is a network namespace with its own address (10.213.0.0/24, inside the namespaces
only) and each rank runs under a UTS namespace with its node's host name, so the MPI sees
separate hosts: shared memory inside a node, TCP through the bridge between nodes. `up` writes a
host file; --hosts with it makes `collkit bench`, `tune` and `run` launch there (mpiexec in a
head namespace, the nodes reached through a launcher script instead of ssh) and the rows record
nodes x ranks per node. The nodes share this machine's cores and memory: timings are emulated,
not a cluster's (docs/cluster.md).

With --slurm, munge, slurmctld and one slurmd per node run on the cluster (Debian's slurm-wlm,
its files in /run/collkit/NAME/slurm): put /run/collkit/NAME/slurm/bin first on PATH and
salloc, srun and sbatch reach it; inside an allocation collkit's commands launch on its nodes.
"""

from __future__ import annotations

import argparse
import sys

from collkit import cluster
from collkit.slurm import PARTITION

NAME = "cluster"
HELP = "emulated nodes on this machine (network namespaces; root): up, down, status, cleanup"

DEFAULT_NAME = "ck"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="make N nodes and print the host file for --hosts")
    up.add_argument("--nodes", type=int, default=2, help="number of nodes (2)")
    up.add_argument("--name", default=DEFAULT_NAME, help=f"cluster name ({DEFAULT_NAME})")
    up.add_argument(
        "--rate",
        default="",
        metavar="RATE",
        help="limit each node's link, both ways (tc tbf): 1gbit, 100mbit, 125mbps",
    )
    up.add_argument(
        "--slurm",
        action="store_true",
        help="start Slurm on the nodes: munge, slurmctld, a slurmd per node (slurm-wlm)",
    )
    down = sub.add_parser("down", help="end its processes and remove everything it made")
    down.add_argument("name", nargs="?", default=DEFAULT_NAME, help=f"({DEFAULT_NAME})")
    sub.add_parser("status", help="clusters that are up, and leftovers")
    clean = sub.add_parser(
        "cleanup", help="remove leftovers of crashed runs (namespaces, files with collkit's prefix)"
    )
    clean.add_argument("--all", action="store_true", help="remove every cluster, up or not")


def run(args: argparse.Namespace) -> int:
    if args.action == "up":
        c = cluster.Cluster.up(args.name, args.nodes, rate=args.rate, slurm=args.slurm)
        print(f"up: {c.describe()}")
        print(f"host file: {c.hostfile}")
        print(f"  collkit bench allreduce -np {2 * c.nodes} --hosts {c.hostfile}")
        print(f"  collkit run -np {c.nodes} --hosts {c.hostfile} -- ./app")
        if c.slurm:
            s = c.slurm_of()
            print(f"Slurm: partition {PARTITION} over {', '.join(c.hostnames)}")
            print(f"  export PATH={s.bin}:$PATH")
            print(
                f"  salloc -N {c.nodes} --ntasks-per-node 2 collkit bench allreduce "
                f"-np {2 * c.nodes}"
            )
        print(f"down: collkit cluster down {c.name}")
        return 0
    if args.action == "down":
        cluster.check_name(args.name)
        cluster.require_root()
        removed = cluster.Cluster(name=args.name, nodes=0).down()
        if not removed:
            print(f"collkit cluster: no cluster '{args.name}' to remove", file=sys.stderr)
            return 1
        print(f"removed {len(removed)}: " + ", ".join(removed))
        return 0
    if args.action == "cleanup":
        removed = cluster.cleanup(everything=args.all)
        print(f"removed {len(removed)}" + (": " + ", ".join(removed) if removed else ""))
        return 0
    # status
    found = cluster.clusters()
    for c in found:
        state = "left over (its owner ended)" if c.leftover() else "up"
        print(f"{state}: {c.describe()}; host file {c.hostfile}")
    known = {ns for c in found for ns in c.all_namespaces()}
    stray = [ns for ns in cluster.namespaces() if ns not in known]
    if stray:
        print("namespaces of no cluster (collkit cluster cleanup): " + ", ".join(stray))
    if not found and not stray:
        print("no emulated cluster")
    return 0
