"""``make test``: the lab tier in a pytest process of its own, beside the rest of the suite on three workers.

The lab (``tests/lab/``) runs real etcd, Prometheus, Alertmanager and node_exporter and waits on their
clocks: 5-minute windows forgetting a fault, elections, group and repeat intervals. Alone it takes about
ten minutes for four of CPU (2026-12-03: 632 s wall, 234 s CPU, 36% of one core). As one of the suite's
two xdist workers it held that worker idle for most of those ten minutes; beside them, its waits overlap
the other tiers' CPU work. Its tests also need one process, in file order: each fault test leaves its
alerts on the module's lab, and the last one checks that every alert they raised resolves at the sink
(with worksteal, a worker could have taken that test alone and passed it on a fresh lab).

The rest runs on three workers for two cores: some of its tests wait on a clock too (a real Prometheus
or Alertmanager, a remote read, a stalled server), about 230 s of a worker's time in a run, and a third
worker keeps both cores busy meanwhile (2026-12-05: 12 min 8 s and 191% of the cores, against 12 min 38 s
and 175% on two workers). It runs at a lower priority (``nice``): the lab's servers wake for a few
milliseconds at a time (etcd's heartbeats, Prometheus's evaluations) and get the core first, so busy
workers do not stretch an election or an evaluation the lab's timings count on.

Exit status: the first non-zero of the two runs (pytest's own codes), after both have finished and the
lab's output is printed. Ctrl-C stops both (the terminal signals the whole process group; a lab still
running after that is terminated by its PID).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAB = "tests/lab"
NICENESS = 5


FAST = ("tests/unit", "tests/targets")


def bytecode_cached(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with Python's bytecode cached out of the tree where it turns the cache off.

    With PYTHONDONTWRITEBYTECODE set (this machine sets it), every Python process compiles what it imports
    from source again, and pytest rewrites every test module's assertions again: collecting the suite took
    7.4 s of CPU in a pytest process started so, 3.5 s with the bytecode kept in a cache of its own
    (PYTHONPYCACHEPREFIX, where pytest keeps its rewritten modules too). tests/conftest.py applies it to
    every process a test starts (and so to the xdist workers); this module to the pytest processes it
    starts itself (the lab's, the controllers). A developer's own prefix wins.
    """
    env = dict(environ)
    if env.get("PYTHONDONTWRITEBYTECODE") and not env.get("PYTHONPYCACHEPREFIX"):
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"slo-compiler-pycache-{os.getuid()}")
        del env["PYTHONDONTWRITEBYTECODE"]
    return env


def commands(python: str = sys.executable) -> tuple[list[str], list[str]]:
    """The lab's pytest command and the rest's, in that order."""
    lab = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=10", "--cpu-durations=10", LAB]
    rest = [python, "-m", "pytest", "-q", "-n", "3", "--dist", "worksteal", "--durations=25", "--cpu-durations=25"]
    rest.append(f"--ignore={LAB}")
    return lab, rest


def main(argv: list[str]) -> int:
    env = bytecode_cached(os.environ)
    if argv == ["--fast"]:  # make test-fast
        return subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "2", *FAST], cwd=REPO, env=env)
    lab_command, rest_command = commands()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", prefix="slo-lab-") as log:
        lab = subprocess.Popen(lab_command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            rest = subprocess.call(rest_command, cwd=REPO, env=env, preexec_fn=lambda: os.nice(NICENESS))
            lab_code = lab.wait()
        except KeyboardInterrupt:
            return 130
        finally:
            if lab.poll() is None:
                lab.terminate()
                lab.wait(timeout=60)
        log.seek(0)
        print(f"\n==== the lab tier ({LAB}), run beside the rest ====", flush=True)
        sys.stdout.write(log.read())
    return rest or lab_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
