"""Long fuzzing runs of the targets in tests/test_fuzz.py, outside CI.

Each target runs for ``--minutes`` with fresh random seeds (hypothesis, an unbounded
number of examples) until the time is up or it finds an input that breaks its property;
a finding is printed with hypothesis's minimal failing example and ends the target.
The summary (target, minutes, examples, finding) goes to stdout and, with ``--report``,
to a markdown file.

    .venv/bin/python scripts/fuzz.py --minutes 30 --jobs 2 --report benchmarks/results/fuzz.md
    .venv/bin/python scripts/fuzz.py --minutes 1 -k svmlight      # one family, briefly
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import datetime
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests", "test_fuzz.py")


def targets(keyword=None):
    """The fuzz targets: the hypothesis tests of tests/test_fuzz.py (``@given``)."""
    with open(TESTS, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "given" for d in node.decorator_list)
    ]
    return [n for n in names if keyword is None or keyword in n]


def run(target, minutes):
    """Run one target for ``minutes``; returns (target, seconds, outcome, output tail)."""
    env = dict(os.environ, L1SCALE_FUZZ_EXAMPLES=str(10**9), L1SCALE_FUZZ_RANDOM="1")
    args = [f"{TESTS}::{target}", "-x", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics"]
    # SIGINT as KeyboardInterrupt in the child: a shell's background job inherits it
    # ignored, and Python installs its handler only when it is not.
    # SIGUSR1 makes the child print every thread's stack (faulthandler): the script sends
    # it to a child that does not stop after the interrupt, to show where it sits.
    child = (
        "import faulthandler, signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "faulthandler.register(signal.SIGUSR1, all_threads=True); "
        f"sys.exit(pytest.main({args!r}))"
    )
    cmd = [sys.executable, "-c", child]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=minutes * 60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # pytest reports the statistics so far on an interrupt
        try:
            output, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)
            time.sleep(5)
            proc.kill()
            output, _ = proc.communicate()
            output += "\n[fuzz.py: no exit within 120 s of SIGINT; the stacks above are from SIGUSR1]"
    seconds = time.perf_counter() - start
    # 1: a test failed (a finding); 2: interrupted at the time limit; 0: cannot happen
    # with an unbounded example count, but is no finding either.
    outcome = (
        "FINDING"
        if proc.returncode == 1
        else "none"
        if proc.returncode in (0, 2)
        else "no exit after SIGINT (killed)"
        if proc.returncode == -signal.SIGKILL
        else f"rc {proc.returncode}"
    )
    return target, seconds, outcome, output[-4000:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="per target (default 30)")
    parser.add_argument("--jobs", type=int, default=1, help="targets run at once")
    parser.add_argument("-k", dest="keyword", help="only the targets whose name contains this")
    parser.add_argument("--report", help="also write the summary as markdown here")
    args = parser.parse_args(argv)
    names = targets(args.keyword)
    if not names:
        parser.error("no fuzz target matches")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda t: run(t, args.minutes), names))
    lines = [
        f"# Fuzzing run, {datetime.datetime.now(datetime.UTC).date()}",
        "",
        f"`scripts/fuzz.py --minutes {args.minutes:g} --jobs {args.jobs}`, fresh random seeds.",
        "",
        "| target | minutes | finding |",
        "|---|---|---|",
    ]
    for target, seconds, outcome, _ in results:
        lines.append(f"| {target} | {seconds / 60:.1f} | {outcome} |")
    for target, _, outcome, tail in results:
        if outcome != "none":
            print(f"\n=== {target}\n{tail}", file=sys.stderr)
            lines += ["", f"## {target}: {outcome}", "", "```", tail.strip(), "```"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(text)
    return 1 if any(r[2] != "none" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
