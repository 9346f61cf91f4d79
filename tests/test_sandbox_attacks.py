"""Hostile jobs against the real sandbox, one per attack class, each judged from outside the sandbox: the
host's files, sockets and processes, never the job's own word. The strict tests need bubblewrap and fail (not
skip) without it — CI installs it (`make system-deps`); the weak sandbox's own guarantees are tested beside
them and run either way.
"""

from __future__ import annotations

import errno
import os
import platform
import socket
import stat
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_medic.graph.drivers import cli
from kernel_medic.tools.sandbox.pool import JobOutcome, SandboxLimits, SandboxUnavailable, WorkerPool

EXEC = "kernel_medic.tools.sandbox.pool:exec_source"
REPO = Path(__file__).resolve().parents[1]
SECRET_PREFIX = "sk-kmedic-test-"


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(device="cpu", size=2, limits=SandboxLimits(timeout_s=10.0), sandbox="bwrap") as p:
        p.worker_notes  # noqa: B018 - waits until both workers are warm
        yield p


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A world-readable folder in the host's /tmp, as another user's files would be."""
    folder = Path(tempfile.mkdtemp(prefix="kmedic-host-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def run(pool: WorkerPool, source: str, **payload: object) -> JobOutcome:
    return pool.run(EXEC, {"source": source, **payload})


def assert_still_serves(pool: WorkerPool) -> None:
    for _ in range(2):  # both workers, whichever took the bad job
        out = run(pool, "result = x * 2", x=21)
        assert out.status == "ok", out
        assert out.result == {"result": 42}


def descendants(root: int) -> list[int]:
    """Host pids below ``root`` (bwrap): its sandbox's init, the worker and whatever a job left."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    parent[int(name)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        found += kids
        frontier += kids
    return found


FIND_SECRETS = """
import glob, os
found = []
for name, value in os.environ.items():
    if prefix in value:
        found.append('env ' + name)
for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline'):
    try:
        if prefix.encode() in open(path, 'rb').read():
            found.append(path)
    except OSError:
        pass
try:
    found.append('file ' + open(secret_path).read())
except OSError:
    pass
print(found)
result = found
if found:
    raise RuntimeError(repr(found))
"""


@pytest.mark.parametrize("mode", ["bwrap", "weak"])
def test_caller_secrets_do_not_reach_a_job_or_its_report(
    mode: str, host_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = SECRET_PREFIX + uuid.uuid4().hex
    monkeypatch.setenv("KMEDIC_TEST_API_KEY", secret)
    secret_file = host_dir / "secret.txt"
    secret_file.write_text(secret)
    secret_file.chmod(0o644)
    with WorkerPool(device="cpu", size=1, limits=SandboxLimits(timeout_s=10.0), sandbox=mode) as p:
        out = run(p, FIND_SECRETS, prefix=SECRET_PREFIX, secret_path=str(secret_file))
    assert secret not in repr(out)
    if mode == "bwrap":  # neither the environment nor a world-readable host file is there to be read
        assert out.status == "ok" and out.result == {"result": []}, out
    else:  # the weak sandbox sees the host's files; the report is still scrubbed
        assert "env KMEDIC_TEST_API_KEY" not in repr(out)


def test_secret_in_what_a_job_prints_raises_or_returns_is_redacted(
    pool: WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = SECRET_PREFIX + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    source = "import sys\nprint(leaked)\nprint(leaked, file=sys.stderr)\nraise ValueError('key=' + leaked)"
    out = run(pool, source, leaked=secret)
    assert out.status == "error"
    assert secret not in repr(out)
    assert out.error == "ValueError: key=[redacted]"
    assert "[redacted]" in out.stdout_tail and "[redacted]" in out.stderr_tail
    returned = run(pool, "result = {'nested': [leaked, (1, 'x' + leaked)]}", leaked=secret)
    assert returned.status == "ok" and secret not in repr(returned.result)
    assert_still_serves(pool)


SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")


def test_files_a_job_writes_do_not_outlive_it(pool: WorkerPool) -> None:
    name = f"kmedic-leak-{uuid.uuid4().hex}"
    source = """
import os
written = []
for folder in scratch + (os.environ['HOME'], os.getcwd(), '/job', '/', '/root'):
    try:
        with open(os.path.join(folder, name), 'w') as fh:
            fh.write('x')
        written.append(folder)
    except OSError:
        pass
result = written
"""
    out = run(pool, source, scratch=SCRATCH, name=name)
    assert out.status == "ok", out
    assert "/job" not in out.result["result"] and "/" not in out.result["result"]
    for folder in SCRATCH:
        assert not os.path.exists(os.path.join(folder, name)), folder
    for w in pool._workers:  # the slot folder holds only what the pool put there
        assert sorted(os.listdir(w.slot_dir)) == [
            "evidence.bin", "payload.pt", "result.pt", "stderr.txt", "stdout.txt"
        ]
    look = "import os\nresult = [f for f in folders if os.path.exists(os.path.join(f, name))]"
    for _ in range(2):  # nor are they there for the next job, on either worker
        later = run(pool, look, folders=SCRATCH, name=name)
        assert later.status == "ok" and later.result == {"result": []}, later
    assert_still_serves(pool)


def test_unix_socket_listener_on_the_host_gets_no_connection(pool: WorkerPool, host_dir: Path) -> None:
    host_dir.chmod(0o777)
    path = str(host_dir / "listener.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        os.chmod(path, 0o777)
        server.listen(1)
        server.settimeout(0.5)
        source = "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect(path)\nresult = 'connected'"
        out = run(pool, source, path=path)
        assert out.status == "error" and out.error_type in ("FileNotFoundError", "PermissionError"), out
        with pytest.raises(socket.timeout):
            server.accept()
    os.unlink(path)
    assert_still_serves(pool)


def test_no_process_of_a_job_survives_it(pool: WorkerPool) -> None:
    source = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(120)
        os._exit(0)
result = 'left'
"""
    out = run(pool, source)
    assert out.status == "ok", out
    for w in pool._workers:  # seen from the host: below each bwrap only its init and the worker
        assert w.proc is not None
        assert len(descendants(w.proc.pid)) == 2, descendants(w.proc.pid)
    assert_still_serves(pool)


@pytest.mark.parametrize("mode", ["bwrap", "weak"])
def test_package_planted_in_the_cwd_never_loads(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "planted-code-ran"
    plant = f"open({str(marker)!r}, 'w').write('pwned')\n"
    (tmp_path / "kernel_medic").mkdir()
    (tmp_path / "kernel_medic" / "__init__.py").write_text(plant)
    (tmp_path / "sitecustomize.py").write_text(plant)
    (tmp_path / "torch.py").write_text(plant)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTHONSTARTUP", str(tmp_path / "sitecustomize.py"))
    with WorkerPool(device="cpu", size=1, limits=SandboxLimits(timeout_s=10.0), sandbox=mode) as p:
        out = run(p, "import sys, kernel_medic\nresult = [kernel_medic.__file__, sys.flags.isolated]")
    assert out.status == "ok", out
    assert out.result["result"][1] == 1
    assert not out.result["result"][0].startswith(str(tmp_path))
    assert not marker.exists()


def test_a_job_sees_only_the_sandbox(pool: WorkerPool, host_dir: Path) -> None:
    reference = host_dir / "reference.py"
    reference.write_text("class Model: pass\n")
    reference.chmod(0o644)
    source = """
import os
pids = [n for n in os.listdir('/proc') if n.isdigit()]
cmdlines = []
for pid in pids:
    try:
        cmdlines.append(open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace'))
    except OSError:
        pass
visible = [p for p in paths if os.path.exists(p)]
result = {'pids': pids, 'cmdlines': cmdlines, 'visible': visible, 'tmp': os.listdir('/tmp')}
"""
    paths = [str(reference), str(host_dir), str(REPO / "benchmarks"), str(REPO / "examples"), "/root/.bashrc"]
    out = run(pool, source, paths=paths)
    assert out.status == "ok", out
    seen = out.result["result"]
    assert len(seen["pids"]) <= 3, seen  # bwrap's init, the worker, the job
    assert not any("pytest" in c or str(os.getpid()) in c for c in seen["cmdlines"]), seen["cmdlines"]
    assert seen["visible"] == []
    assert set(seen["tmp"]) <= {"home"}  # the job's own home; nothing of the host's /tmp
    assert_still_serves(pool)


def test_a_job_cannot_reach_into_its_worker(pool: WorkerPool) -> None:
    # The worker serves every later job: its memory, descriptors and environment are out of a job's reach.
    source = """
import os
reached = []
worker = os.getppid()
for name, mode in (('mem', 'r+b'), ('environ', 'rb'), ('fd/0', 'rb'), ('fd/1', 'wb')):
    try:
        with open(f'/proc/{worker}/{name}', mode):
            reached.append(name)
    except OSError:
        pass
result = reached
"""
    out = run(pool, source)
    assert out.status == "ok" and out.result == {"result": []}, out
    assert_still_serves(pool)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp filter is written for x86_64")
def test_seccomp_refuses_new_namespaces_ptrace_and_io_uring(pool: WorkerPool) -> None:
    source = """
import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
calls = {
    'unshare': lambda: libc.unshare(0x10000000),  # a user namespace: root inside, new kernel surface
    'ptrace': lambda: libc.ptrace(16, os.getppid(), 0, 0),  # PTRACE_ATTACH to the worker
    'io_uring_setup': lambda: libc.syscall(425, 8, 0),
    'mount': lambda: libc.mount(b'none', b'/tmp', b'tmpfs', 0, None),
}
refused = {}
for name, call in calls.items():
    refused[name] = call() == -1 and ctypes.get_errno() == 1
threading.Thread(target=print).start()  # threads, fork and exec still work
result = [refused, subprocess.run(['/bin/echo', 'ok'], capture_output=True, text=True).stdout.strip()]
"""
    out = run(pool, source)
    assert out.status == "ok", out
    refused, echoed = out.result["result"]
    assert refused == {"unshare": True, "ptrace": True, "io_uring_setup": True, "mount": True}
    assert echoed == "ok"
    assert_still_serves(pool)


def test_writing_a_file_past_the_size_limit_fails(pool: WorkerPool) -> None:
    source = """
import os, sys
codes = []
for path in ('/tmp/big', os.path.join(os.environ['HOME'], 'big'), '/dev/shm/big', '/dev/stdout'):
    try:
        with open(path, 'wb') as fh:
            for _ in range(65):
                fh.write(b'x' * 2**20)
        codes.append(0)
    except OSError as exc:
        codes.append(exc.errno)
result = codes
"""
    out = run(pool, source)
    assert out.status == "ok", out
    *scratch, stdout = out.result["result"]
    assert all(code in (errno.EFBIG, errno.ENOSPC) for code in scratch), out.result
    assert stdout == errno.EFBIG, out.result  # the host-side output file: RLIMIT_FSIZE itself
    # The harness's own result may be larger (SandboxLimits.result_mb): big outputs still come back.
    big = run(pool, "import torch\nresult = torch.ones(20 * 2**20)")
    assert big.status == "ok" and big.result["result"].numel() == 20 * 2**20, big.error
    assert_still_serves(pool)


def test_missing_bubblewrap_is_a_one_line_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KMEDIC_BWRAP", "/nonexistent/bwrap")
    monkeypatch.delenv("KMEDIC_SANDBOX", raising=False)
    with pytest.raises(SandboxUnavailable) as info:
        WorkerPool(device="cpu", size=1)
    assert "\n" not in str(info.value) and "KMEDIC_SANDBOX=weak" in str(info.value)
    assert cli.main(["check", str(REPO / "examples" / "softmax_tail"), "--tier", "light"]) == 2


def test_bubblewrap_that_cannot_start_is_a_one_line_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusal = "bwrap: Creating new namespace failed: Operation not permitted"
    fake = tmp_path / "bwrap"  # what bwrap says where namespaces are forbidden (a locked-down container)
    fake.write_text(f"#!/bin/sh\necho '{refusal}' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KMEDIC_BWRAP", str(fake))
    monkeypatch.delenv("KMEDIC_SANDBOX", raising=False)
    with WorkerPool(device="cpu", size=1) as p, pytest.raises(SandboxUnavailable) as info:
        run(p, "result = 1")
    assert str(info.value) == f"bubblewrap could not set up the sandbox: {refusal}"


def test_weak_mode_is_an_explicit_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KMEDIC_BWRAP", "/nonexistent/bwrap")
    monkeypatch.setenv("KMEDIC_SANDBOX", "weak")
    with WorkerPool(device="cpu", size=1, limits=SandboxLimits(timeout_s=10.0)) as p:
        out = run(p, "import os\nresult = sorted(os.environ)")
        assert out.status == "ok", out
        assert not [k for k in out.result["result"] if "KEY" in k or "TOKEN" in k or k.startswith("PYTHON")]


def test_slot_files_are_private_to_the_pool(pool: WorkerPool) -> None:
    for w in pool._workers:
        info = os.stat(w.slot_dir)
        assert not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)


FORGE_PADS = """\
import sys

_jobs = sys.modules["kernel_medic.tools.evaluation.jobs"]
# Report every pad as empty: nothing to see, whatever the kernel wrote.
_jobs._pads = lambda label, buf, span: {"label": label, "kind": "alloc", "before": buf[:0], "after": buf[:0]}
"""


def test_out_of_bounds_write_is_seen_even_when_the_candidate_forges_its_pads(
    evaluator: object, tmp_path: Path
) -> None:
    from kernel_medic.tools.evaluation.problem import load_problem
    from problems import scale_candidate, write_problem

    unmasked = ("tl.store(out_ptr + offs, x * 2.0, mask=mask)", "tl.store(out_ptr + offs, x * 2.0)")
    source = scale_candidate(unmasked).replace("import triton\n", "import triton\n" + FORGE_PADS, 1)
    report = evaluator.evaluate(load_problem(write_problem(tmp_path, source)), tier="light")  # type: ignore[attr-defined]
    assert report.verdict == "mismatch", report.symptoms
    assert any(r.startswith("out_of_bounds_write") for r in report.cases[0].relationships), report.cases[0]
    assert report.score < 1.0


AXPY_REFERENCE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y, idx):
        return x * 3.0 + y.float()[idx]


def get_inputs():
    return [torch.randn(3, 500), torch.randn(3, 500).half(), torch.arange(3)]


def get_init_inputs():
    return []
"""

AXPY_CANDIDATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, x * 3.0 + y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y, idx):
        x = x.contiguous()
        y = y[idx].contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        axpy_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        return out
"""


def test_several_inputs_of_several_dtypes_sit_in_their_own_arena_slots(
    evaluator: object, tmp_path: Path
) -> None:
    # Three inputs (float32, float16, int64), non-contiguous variants and a repeated run: each input is read
    # back from its own place in the evidence file, and a correct kernel passes clean.
    from kernel_medic.tools.evaluation.problem import load_problem
    from problems import write_problem

    folder = write_problem(tmp_path, AXPY_CANDIDATE, AXPY_REFERENCE)
    report = evaluator.evaluate(load_problem(folder), tier="full")  # type: ignore[attr-defined]
    assert report.verdict == "pass", (report.symptoms, [(c.name, c.relationships) for c in report.cases])
    flagged = [r for c in report.cases for r in c.relationships if r.startswith(("out_of_bounds", "input"))]
    assert flagged == []
