"""``make test``: the lab tier in three pytest processes of its own, beside the rest of the suite on three workers.

The lab (``tests/lab/``) runs real etcd, Prometheus, Alertmanager and node_exporter and waits on their
clocks: 5-minute windows forgetting a fault, elections, group and repeat intervals. In one process it took
about ten and a half minutes for two and a half of CPU (2026-12-05: 638 s wall, 149 s CPU), longer than
the rest of the suite once the rest reuses promtool's verdicts (tests/promtool_runs.py); its modules each
start their own lab, so they run in three processes at once (``LABS``): etcd's faults, the other faults
(each module waits once for its 5-minute windows to forget its faults, about seven minutes and six) and the
healthy lab, its Prometheus restart and vmalert (about three). As one of the
suite's xdist workers the lab held that worker idle; beside them, its waits overlap the other tiers' CPU
work. A module's tests need one process, in file order: each fault test leaves its alerts on the module's
lab, and a later one checks that every alert they raised resolves at the sink (with worksteal, a worker
could have taken that test alone and passed it on a fresh lab).

The rest runs on three workers for two cores: some of its tests wait on a clock too (a real Prometheus
or Alertmanager, a remote read, a stalled server), about 230 s of a worker's time in a run, and a third
worker keeps both cores busy meanwhile (2026-12-05: 12 min 8 s and 191% of the cores, against 12 min 38 s
and 175% on two workers). It runs at a lower priority (``nice``): the lab's servers wake for a few
milliseconds at a time (etcd's heartbeats, Prometheus's evaluations) and get the core first, so busy
workers do not stretch an election or an evaluation the lab's timings count on.

Exit status: the first non-zero of the runs (pytest's own codes), after all have finished and the labs'
output is printed. Ctrl-C stops them all (the terminal signals the whole process group; a lab still
running after that is terminated by its PID).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAB = "tests/lab"
# The labs start a few seconds apart, the longest first: each starts about ten servers on ports chosen free a moment
# before they bind them, and two labs choosing at the same moment once chose the same port (tests/lab/lab.py).
LAB_STAGGER_S = 3.0
LABS = (
    ("tests/lab/test_lab_faults.py",),
    ("tests/lab/test_lab_faults_followers_and_monitors.py",),
    ("tests/lab/test_lab.py", "tests/lab/test_lab_vmalert.py"),
)
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


def commands(python: str = sys.executable) -> tuple[list[list[str]], list[str]]:
    """The labs' pytest commands (the longest first) and the rest's."""
    labs = [
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=10", "--cpu-durations=10", *modules]
        for modules in LABS
    ]
    rest = [python, "-m", "pytest", "-q", "-n", "3", "--dist", "worksteal", "--durations=25", "--cpu-durations=25"]
    rest.append(f"--ignore={LAB}")
    return labs, rest


def main(argv: list[str]) -> int:
    env = bytecode_cached(os.environ)
    if argv == ["--fast"]:  # make test-fast
        return subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "2", *FAST], cwd=REPO, env=env)
    lab_commands, rest_command = commands()
    with contextlib.ExitStack() as stack:
        logs = [
            stack.enter_context(tempfile.TemporaryFile(mode="w+", encoding="utf-8", prefix="slo-lab-"))
            for _ in lab_commands
        ]
        labs: list[subprocess.Popen[bytes]] = []
        for command, log in zip(lab_commands, logs, strict=True):
            if labs:
                time.sleep(LAB_STAGGER_S)
            labs.append(subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env))
        try:
            rest = subprocess.call(rest_command, cwd=REPO, env=env, preexec_fn=lambda: os.nice(NICENESS))
            lab_codes = [lab.wait() for lab in labs]
        except KeyboardInterrupt:
            return 130
        finally:
            for lab in labs:
                if lab.poll() is None:
                    lab.terminate()
                    lab.wait(timeout=60)
        for modules, log in zip(LABS, logs, strict=True):
            log.seek(0)
            print(f"\n==== the lab tier ({', '.join(modules)}), run beside the rest ====", flush=True)
            sys.stdout.write(log.read())
    return rest or next((code for code in lab_codes if code), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
