"""The sandboxed worker pool, with real worker processes: every fault becomes a verdict, the pool goes on."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from kernel_medic.tools.sandbox import backends, confinement
from kernel_medic.tools.sandbox import pool as pool_mod
from kernel_medic.tools.sandbox.pool import JobOutcome, SandboxLimits, WorkerPool

EXEC = "kernel_medic.tools.sandbox.pool:exec_source"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(device="cpu", size=2, limits=SandboxLimits(timeout_s=5.0)) as p:
        p.worker_notes  # noqa: B018 - waits until both workers are warm
        yield p


def test_cpu_workers_start_warm_and_a_job_counts_only_its_own_kernel_work(pool: WorkerPool) -> None:
    # Each worker launches a warm-up kernel before serving (its children inherit what the first launch
    # loads); that launch must neither fail nor leak into a job's counts of work and lanes.
    assert not [n for n in pool.worker_notes if "warm-up failed" in n]
    shims = "from kernel_medic.tools.sandbox import interpreter_shims\n"
    counts = shims + "result = interpreter_shims.drain_work()"
    for _ in range(2):
        assert run(pool, counts).result == {"result": {"work": 0, "lanes": 0, "live_lanes": 0}}


def run(pool: WorkerPool, source: str, limits: SandboxLimits | None = None, **payload: object) -> JobOutcome:
    return pool.run(EXEC, {"source": source, **payload}, limits)


def assert_still_serves(pool: WorkerPool) -> None:
    for _ in range(2):  # both workers, whichever took the bad job
        out = run(pool, "result = x * 2", x=21)
        assert out.status == "ok", out
        assert out.result == {"result": 42}


def _host_processes() -> dict[int, tuple[str, int]]:
    """pid -> (real uid, parent pid) of every process the host sees."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/status") as fh:
                    fields = dict(line.split(":", 1) for line in fh if ":" in line)
                found[int(name)] = (fields["Uid"].split()[0], int(fields["PPid"]))
            except (OSError, KeyError, ValueError, IndexError):
                continue
    return found


def sandbox_processes(pool: WorkerPool) -> list[int]:
    """Host processes left by jobs: any of a sandbox uid but the confined workers themselves."""
    uids = {str(u) for u in pool.sandbox_uids}
    procs = _host_processes()
    found = []
    for pid, (uid, ppid) in procs.items():
        if uid not in uids:
            continue
        # Inside bubblewrap the worker itself runs under its uid, started by bwrap (root); jobs are below it.
        if pool.sandbox == "bwrap" and procs.get(ppid, ("", 0))[0] not in uids:
            continue
        found.append(pid)
    return found


def test_round_trip_of_tensors_and_containers(pool: WorkerPool) -> None:
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    source = "result = {'y': x.t() * 2, 'shape': list(x.shape), 'pair': (1, 'a'), 'none': None, 'ok': True}"
    out = run(pool, source, x=x)
    assert out.status == "ok", out
    res = out.result["result"]
    assert torch.equal(res["y"], x.t() * 2)
    assert res["shape"] == [3, 4] and res["pair"] == (1, "a") and res["none"] is None and res["ok"] is True
    assert out.wall_s < 2.0


def test_warm_job_is_cheap(pool: WorkerPool) -> None:
    start = time.monotonic()
    for _ in range(4):
        assert run(pool, "result = 1").status == "ok"
    assert (time.monotonic() - start) / 4 < 0.5


def test_exception_becomes_error_with_type_message_and_traceback(pool: WorkerPool) -> None:
    out = run(pool, "print('before')\ndef f():\n    return 1 / 0\nf()")
    assert out.status == "error"
    assert out.error_type == "ZeroDivisionError"
    assert out.error == "ZeroDivisionError: division by zero"
    assert "<candidate>" in out.traceback and "in f" in out.traceback
    assert "before" in out.stdout_tail
    assert_still_serves(pool)


def test_segfault_is_a_crash(pool: WorkerPool) -> None:
    out = run(pool, "import ctypes\nctypes.string_at(0)")
    assert out.status == "crash"
    assert out.error == "killed by signal 11 (SIGSEGV)"
    assert_still_serves(pool)


def test_exit_without_result_is_a_crash(pool: WorkerPool) -> None:
    out = run(pool, "import os\nos._exit(3)")
    assert out.status == "crash"
    assert out.error == "exited with code 3 before returning a result"
    assert_still_serves(pool)


def test_infinite_loop_times_out(pool: WorkerPool) -> None:
    out = run(pool, "while True:\n    pass", SandboxLimits(timeout_s=1.0))
    assert out.status == "timeout"
    assert out.error == "exceeded the 1.0 s wall-clock limit"
    assert 1.0 <= out.wall_s < 3.0
    assert_still_serves(pool)


def test_fork_bomb_is_contained_and_leaves_nothing_behind(pool: WorkerPool) -> None:
    start = time.monotonic()
    out = run(pool, "import os\nwhile True:\n    os.fork()", SandboxLimits(timeout_s=3.0))
    assert out.status in ("timeout", "error"), out
    assert time.monotonic() - start < 20
    if IS_ROOT:
        assert sandbox_processes(pool) == []
    assert_still_serves(pool)


def test_escaped_background_process_is_killed_after_the_job(pool: WorkerPool, tmp_path: object) -> None:
    # A daemon in its own session escapes the job's process group; it must still not outlive the job.
    source = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nresult = os.getpid()"
    out = run(pool, source)
    assert out.status == "ok", out
    if IS_ROOT:
        assert sandbox_processes(pool) == []
    assert_still_serves(pool)


def test_huge_allocation_fails_fast_as_error(pool: WorkerPool) -> None:
    start = time.monotonic()
    out = run(pool, "import torch\ntorch.empty(30 * 2**30, dtype=torch.uint8)")
    assert out.status == "error", out
    assert out.error_type in ("RuntimeError", "MemoryError")
    assert time.monotonic() - start < 3.0
    assert_still_serves(pool)


def test_child_has_no_network(pool: WorkerPool) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        source = (
            "import socket\nsocket.create_connection(('127.0.0.1', port), timeout=2)\nresult = 'connected'"
        )
        out = run(pool, source, port=port)
        assert out.status == "error", out
        assert out.error_type is not None and "Error" in out.error_type
        with pytest.raises(socket.timeout):
            server.accept()
        # Same code with the network allowed does connect: the refusal above is the sandbox's doing. With
        # bubblewrap the network is a property of the pool's workers, not of one job.
        if pool.sandbox == "bwrap":
            with pytest.raises(ValueError, match="fixed per pool"):
                run(pool, source, SandboxLimits(timeout_s=5.0, network=True), port=port)
        with WorkerPool(device="cpu", size=1, limits=SandboxLimits(timeout_s=5.0, network=True)) as netpool:
            allowed = run(netpool, source, port=port)
        assert allowed.status == "ok" and allowed.result == {"result": "connected"}, allowed
        server.accept()[0].close()


@pytest.mark.skipif(not IS_ROOT, reason="the uid drop only happens when the pool runs as root")
def test_child_cannot_write_the_users_files(pool: WorkerPool) -> None:
    target = os.path.join(REPO, "sandbox_escape.txt")
    for path in (target, "/root/sandbox_escape.txt"):
        out = run(pool, "open(path, 'w').write('x')", path=path)
        assert out.status == "error", out
        assert out.error_type in ("PermissionError", "OSError"), out
    assert not os.path.exists(target)
    out = run(pool, "import os\nresult = os.getuid()")
    assert out.status == "ok" and out.result["result"] in pool.sandbox_uids and out.result["result"] != 0


def test_child_can_use_its_private_temp_dir(pool: WorkerPool) -> None:
    source = (
        "import os, tempfile\nwith tempfile.NamedTemporaryFile('w') as f:\n"
        "    f.write('x')\n    f.flush()\n    result = os.path.getsize(f.name)"
    )
    out = run(pool, source)
    assert out.status == "ok" and out.result == {"result": 1}, out


def test_job_outside_the_package_is_rejected(pool: WorkerPool) -> None:
    for job in ("os:system", "kernel_medicine.x:f", "kernel_medic.tools.sandbox.pool", "subprocess:run"):
        with pytest.raises(ValueError):
            pool.run(job, {})
        with pytest.raises(ValueError):
            pool.submit(job, {})


def test_unknown_job_function_is_an_error_not_a_crash(pool: WorkerPool) -> None:
    out = pool.run("kernel_medic.tools.sandbox.pool:no_such_function", {})
    assert out.status == "error" and out.error_type == "AttributeError"


def test_unsupported_result_type_is_an_error(pool: WorkerPool) -> None:
    out = run(pool, "result = object()")
    assert out.status == "error" and out.error_type == "TypeError"
    assert "object" in out.error


def test_two_jobs_run_in_parallel(pool: WorkerPool) -> None:
    start = time.monotonic()
    futures = [pool.submit(EXEC, {"source": "import time, os\ntime.sleep(1.0)\nresult = os.getpid()"})
               for _ in range(2)]
    outs = [f.result(timeout=30) for f in futures]
    elapsed = time.monotonic() - start
    assert all(o.status == "ok" for o in outs), outs
    assert outs[0].result != outs[1].result
    assert elapsed < 1.8


def test_cpu_worker_child_has_triton_interpreter(pool: WorkerPool) -> None:
    source = (
        "import os, triton, triton.language as tl\n"
        "result = (os.environ.get('TRITON_INTERPRET'), triton.__version__, hasattr(tl, 'load'))"
    )
    out = run(pool, source)
    assert out.status == "ok", out
    interp, version, has_load = out.result["result"]
    assert interp == "1" and version and has_load


def test_worker_killed_mid_job_is_reported_and_replaced(pool: WorkerPool) -> None:
    future = pool.submit(EXEC, {"source": "import time\ntime.sleep(30)"})
    time.sleep(0.5)
    busy = [w for w in pool._workers if w.child_pid is not None]
    assert len(busy) == 1
    os.kill(busy[0].proc.pid, signal.SIGKILL)
    out = future.result(timeout=20)
    assert out.status == "crash" and "worker died" in out.error
    if IS_ROOT:
        assert sandbox_processes(pool) == []
    assert_still_serves(pool)


def test_closed_pool_refuses_work() -> None:
    p = WorkerPool(device="cpu", size=1)
    p.close()
    p.close()
    with pytest.raises(RuntimeError):
        p.run(EXEC, {"source": "result = 1"})


def test_a_pool_killed_before_close_leaves_a_folder_the_next_pool_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SIGKILLed kmedic cannot clean up; the next pool on the machine removes what it left in /tmp.
    code = (
        "import os, signal\n"
        "from kernel_medic.tools.sandbox.pool import WorkerPool\n"
        "p = WorkerPool(device='cpu', size=1)\n"
        "print(p._base, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert killed.returncode == -signal.SIGKILL
    left = Path(killed.stdout.strip())
    assert left.parent == tmp_path and (left / pool_mod.OWNER_FILE).is_file()
    alive = tmp_path / "kmedic-sandbox-alive"  # a running process's pool (this one's): kept
    alive.mkdir()
    pid, started, namespace = pool_mod._owner().split(" ", 2)
    (alive / pool_mod.OWNER_FILE).write_text(f"{pid} {started} {namespace}\n")
    reused = tmp_path / "kmedic-sandbox-reused"  # a live pid that is not the process that made it: removed
    reused.mkdir()
    (reused / pool_mod.OWNER_FILE).write_text(f"{pid} 1 {namespace}\n")
    elsewhere = tmp_path / "kmedic-sandbox-elsewhere"  # another pid namespace's (a container's): kept
    elsewhere.mkdir()
    (elsewhere / pool_mod.OWNER_FILE).write_text(f"{pid} 1 pid:[1]\n")
    making = tmp_path / "kmedic-sandbox-making"  # no owner file yet: a pool starting right now, kept
    making.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with WorkerPool(device="cpu", size=1) as fresh:
        kept = sorted(p.name for p in tmp_path.iterdir() if p.name != Path(fresh._base).name)
    assert kept == ["kmedic-sandbox-alive", "kmedic-sandbox-elsewhere", "kmedic-sandbox-making"]


def _in_sandbox(device: str, script: str, *, uid: int | None = None) -> subprocess.CompletedProcess[str]:
    """`sh -c script` inside the worker's real bubblewrap sandbox for `device` (as `uid` when given)."""
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if uid is not None else []
    with tempfile.TemporaryDirectory(prefix="kmedic-test-slot-") as slot:
        cmd = confinement.bwrap_command(confinement.find_bwrap(), slot_dir=slot, writable_files=[],
                                        device=device, network=False, tmpfs_bytes=2**24)
        cmd += [*drop, "/bin/sh", "-c", script]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _require_root_and_bwrap() -> None:
    if os.geteuid() != 0:
        pytest.skip("the sandbox's uid drop is checked as root")
    try:
        confinement.find_bwrap()
    except confinement.SandboxUnavailable:
        pytest.skip("bubblewrap is not installed")


def test_a_gpu_worker_is_told_of_the_cuda_driver_and_sees_it_and_its_compiler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In the sandbox Triton's `/sbin/ldconfig -p` fails and only /usr is shown: on an H200 machine every
    launch failed until the worker got TRITON_LIBCUDA_PATH and saw the CC compiler's prefix (/opt/gcc)."""
    _require_root_and_bwrap()
    root = Path(tempfile.mkdtemp(prefix="kmedic-driver-", dir="/tmp"))  # under a folder the sandbox replaces
    try:
        root.chmod(0o755)
        driver, compiler = root / "driver", root / "toolchain" / "bin" / "gcc"
        driver.mkdir()
        (driver / "libcuda.so.1").write_text("")
        compiler.parent.mkdir(parents=True)
        compiler.write_text("#!/bin/sh\n")
        compiler.chmod(0o755)
        (root / "toolchain" / "libexec").mkdir()
        monkeypatch.delenv("TRITON_LIBCUDA_PATH", raising=False)
        monkeypatch.setenv("LD_LIBRARY_PATH", str(driver))
        monkeypatch.setenv("CC", str(compiler))
        backends.libcuda_dir.cache_clear()
        assert backends.get_backend("cuda").worker_env()["TRITON_LIBCUDA_PATH"] == str(driver)
        assert "TRITON_LIBCUDA_PATH" not in backends.get_backend("cpu").worker_env()
        check = f"test -f {driver}/libcuda.so.1 && test -x {compiler} && test -d {root}/toolchain/libexec"
        seen = _in_sandbox("cuda", check, uid=65534)
        assert seen.returncode == 0, seen.stderr
        assert _in_sandbox("cpu", f"test -d {driver}").returncode != 0  # nothing extra for the interpreter
        monkeypatch.setenv("TRITON_LIBCUDA_PATH", "/usr/lib/elsewhere")
        backends.libcuda_dir.cache_clear()
        assert backends.get_backend("cuda").worker_env()["TRITON_LIBCUDA_PATH"] == "/usr/lib/elsewhere"
    finally:
        backends.libcuda_dir.cache_clear()
        shutil.rmtree(root, ignore_errors=True)


def test_a_python_install_under_tmp_is_seen_by_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A virtual environment in /tmp (`python -m venv /tmp/venv`) is bound above the sandbox's own /tmp."""
    _require_root_and_bwrap()
    install = Path(tempfile.mkdtemp(prefix="kmedic-venv-", dir="/tmp"))
    try:
        install.chmod(0o755)
        (install / "bin").mkdir()
        (install / "bin" / "marker").write_text("installed\n")
        paths = confinement.readonly_paths()
        monkeypatch.setattr(confinement, "readonly_paths", lambda: [*paths, str(install)])
        seen = _in_sandbox("cpu", f"cat {install}/bin/marker && touch /tmp/scratch", uid=65534)
        assert seen.returncode == 0, seen.stderr
        assert seen.stdout == "installed\n"
    finally:
        shutil.rmtree(install, ignore_errors=True)
