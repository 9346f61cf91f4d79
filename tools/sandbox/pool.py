"""A pool of warm sandboxed workers: candidate code never runs in the calling process.

Each worker (``python -I -m kernel_medic.tools.sandbox.worker``, an allowlisted environment) runs inside its
own bubblewrap sandbox (``confinement.py``), has torch + triton preloaded and forks a fresh, locked-down child
per job: own session, rlimits (CPU, memory, files, processes, file size). Payload and result travel as
``torch.save`` files in the worker's slot folder, of which the sandbox sees only the payload (read-only) and
the result and output files (writable, truncated before every job); the result is read back with
``weights_only=True`` because the child is untrusted, and everything a job says is scrubbed of the caller's
secrets before it leaves this module. ``KMEDIC_SANDBOX=weak`` (or ``sandbox="weak"``) runs workers without
bubblewrap: the worker makes its own network namespace per job and drops to an unprivileged uid as root.
"""

from __future__ import annotations

import concurrent.futures
import io
import json
import logging
import os
import queue
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch
from kernel_medic.tools.sandbox import confinement
from kernel_medic.tools.sandbox import worker as worker_mod
from kernel_medic.tools.sandbox.backends import get_backend
from kernel_medic.tools.sandbox.confinement import SandboxUnavailable

__all__ = ["JobOutcome", "SandboxLimits", "SandboxUnavailable", "WorkerPool", "exec_source"]

log = logging.getLogger(__name__)

JOB_PREFIX = "kernel_medic."
STARTUP_TIMEOUT_S = 180.0
# On top of the job's own limit: the worker's clean-up sweep may take up to 10 s of its own.
REPLY_GRACE_S = 15.0
TAIL_CHARS = 4000
EVIDENCE_FILE = "evidence.bin"
FOLDER_PREFIX = "kmedic-sandbox-"
OWNER_FILE = "owner"  # "<pid> <start time> <pid namespace>" of the process whose pool made the folder
SLOT_FILES = (worker_mod.RESULT_FILE, worker_mod.STDOUT_FILE, worker_mod.STDERR_FILE, EVIDENCE_FILE)


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 60.0  # wall clock per job; on expiry the job's whole process group is SIGKILLed
    cpu_s: int = 120  # RLIMIT_CPU of the child
    address_space_gb: float = 16.0  # RLIMIT_AS headroom above the worker's own current virtual size
    open_files: int = 256  # RLIMIT_NOFILE
    max_processes: int = 64  # RLIMIT_NPROC (fork bombs)
    file_size_mb: int = 64  # RLIMIT_FSIZE of what a job writes, and the size of each of the sandbox's tmpfs
    result_mb: int = 2048  # the hard RLIMIT_FSIZE: only the harness's result file may grow to it
    network: bool = False  # False: no network (with bubblewrap fixed per pool: the pool's limits decide)


@dataclass
class JobOutcome:
    status: Literal["ok", "error", "crash", "timeout"]
    result: dict | None
    error_type: str | None
    error: str | None
    traceback: str | None
    wall_s: float
    stdout_tail: str = ""
    cpu_s: float = 0.0  # CPU seconds of the job's process (0.0 when unknown): its cost, whatever the load
    stderr_tail: str = ""
    notes: list[str] = field(default_factory=list)
    # The evidence file as this process read it back after the job (None: none asked for, or it was resized).
    evidence: bytes | None = None


def exec_source(payload: dict) -> dict:
    """Built-in job: run ``payload["source"]`` with the payload's keys as variables; returns ``result``."""
    namespace: dict[str, Any] = dict(payload)
    namespace["__name__"] = "__candidate__"
    exec(compile(payload["source"], "<candidate>", "exec"), namespace)
    return {"result": namespace.get("result")}


def _check_job_name(job: str) -> None:
    module, sep, func = job.partition(":")
    if not sep or not func.isidentifier() or not module.startswith(JOB_PREFIX):
        raise ValueError(f"job must be 'kernel_medic.<module>:<function>', got {job!r}")


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _owner() -> str:
    """This process as a folder's owner file names it."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = "?"
    return f"{os.getpid()} {_start_time(os.getpid())} {namespace}"


def remove_stale_folders(tmp: str) -> list[str]:
    """Remove this user's pool folders whose process is gone (killed before close); returns them.

    A folder's owner file names the process, its start time (a reused pid is not mistaken for it) and its pid
    namespace: a folder made in another namespace sharing this /tmp (another container) is left alone.
    """
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(tmp) if n.startswith(FOLDER_PREFIX)]
    except OSError:
        return removed
    own_namespace = _owner().split(" ", 2)[2]
    for name in names:
        path = os.path.join(tmp, name)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
            with open(os.path.join(path, OWNER_FILE), encoding="utf-8") as fh:
                pid, started, namespace = fh.read().split(" ", 2)
        except (OSError, ValueError):
            continue  # not a pool's folder, or one being made right now
        if namespace.strip() == own_namespace and _start_time(int(pid)) != started:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _read_untrusted(path: str, max_bytes: int | None = None) -> bytes | None:
    """Read a file the child may have tampered with: no symlinks, regular files only."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if max_bytes is not None and info.st_size > max_bytes:
            fh.seek(info.st_size - max_bytes)
        return fh.read()


def _tail(path: str) -> str:
    data = _read_untrusted(path, max_bytes=4 * TAIL_CHARS)
    return data.decode("utf-8", errors="replace")[-TAIL_CHARS:] if data else ""


def _place_evidence(path: str, content: bytes, uid: int | None) -> int:
    """Write ``content`` to ``path`` (made or truncated, never through a link); the descriptor stays ours."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        if uid is not None:
            os.fchown(fd, uid, uid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_evidence(fd: int, size: int) -> bytes | None:
    """The evidence file's bytes through our own descriptor; None when the job resized it."""
    try:
        if os.fstat(fd).st_size != size:
            return None
        chunks, offset = [], 0
        while offset < size:
            chunk = os.pread(fd, min(size - offset, 1 << 24), offset)
            if not chunk:
                return None
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None


def _truncate(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
    os.close(fd)


def _scrubbed(outcome: JobOutcome) -> JobOutcome:
    """The outcome with every value of the caller's secret-looking environment variables redacted."""
    secrets = confinement.secret_values()
    if secrets:
        for name in ("result", "error_type", "error", "traceback", "stdout_tail", "stderr_tail", "notes"):
            setattr(outcome, name, confinement.scrub(getattr(outcome, name), secrets))
    return outcome


class _Worker:
    """One worker process and the caller's end of its JSON-lines channel."""

    def __init__(
        self, slot: int, device: str, jobs_dir: str, log_dir: str, bwrap: str | None, limits: SandboxLimits
    ) -> None:
        self.slot = slot
        self.device = device
        self.jobs_dir = jobs_dir
        self.log_path = os.path.join(log_dir, f"worker-{slot}.log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = False
        self.uid: int | None = None
        self.notes: list[str] = []
        self.child_pid: int | None = None  # as the worker sees it (inside bubblewrap: its own PID namespace)
        self._buffer = b""
        self._warned: set[str] = set()
        self.bwrap = bwrap
        self.limits = limits
        self.slot_dir = os.path.join(jobs_dir, f"slot-{slot}")
        self._uid_lock: Any = None
        if bwrap is not None and os.geteuid() == 0:
            self.uid, self._uid_lock = worker_mod._claim_uid(slot)

    @property
    def confined(self) -> bool:
        return self.bwrap is not None

    def _prepare_slot(self) -> None:
        """The slot folder: payload (read-only inside) and the job's result and output files (writable)."""
        os.makedirs(self.slot_dir, mode=0o700, exist_ok=True)
        for name in (worker_mod.PAYLOAD_FILE, *SLOT_FILES):
            path = os.path.join(self.slot_dir, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            os.close(fd)
            if self.uid is not None and name != worker_mod.PAYLOAD_FILE:
                os.chown(path, self.uid, self.uid)
            os.chmod(path, 0o644 if name == worker_mod.PAYLOAD_FILE else 0o600)
        if self.uid is not None:
            os.chown(self.slot_dir, self.uid, self.uid)

    def spawn(self) -> None:
        python = [sys.executable, "-I", "-m", "kernel_medic.tools.sandbox.worker"]
        python += ["--device", self.device, "--slot", str(self.slot)]
        pass_fds: tuple[int, ...] = ()
        if self.bwrap is not None:
            self._prepare_slot()
            env = confinement.worker_environment(get_backend(self.device).worker_env(), "bwrap", "/tmp")
            program = confinement.seccomp_program()
            if program is not None:  # bwrap reads the filter from this descriptor before it starts the worker
                seccomp_fd = os.memfd_create("kmedic-seccomp", 0)
                os.write(seccomp_fd, program)
                os.lseek(seccomp_fd, 0, os.SEEK_SET)
                pass_fds = (seccomp_fd,)
            cmd = confinement.bwrap_command(
                self.bwrap,
                slot_dir=self.slot_dir,
                writable_files=[os.path.join(self.slot_dir, name) for name in SLOT_FILES],
                device=self.device,
                network=self.limits.network,
                tmpfs_bytes=self.limits.file_size_mb * 2**20,
                seccomp_fd=pass_fds[0] if pass_fds else None,
            )
            cmd += [*python, "--jobs-dir", confinement.JOB_MOUNT, "--confined"]
            cmd += ["--drop-uid", str(self.uid)] if self.uid is not None else []
        else:
            env = confinement.worker_environment(get_backend(self.device).worker_env(), "weak", self.jobs_dir)
            cmd = [*python, "--jobs-dir", self.jobs_dir]
        try:
            with open(self.log_path, "wb") as log_file:
                self.proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log_file,
                    env=env,
                    start_new_session=True,
                    pass_fds=pass_fds,
                )
        finally:
            for fd in pass_fds:
                os.close(fd)
        self.ready = False
        self._buffer = b""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure_ready(self) -> None:
        if not self.alive():
            self.kill()
            self.spawn()
        if self.ready:
            return
        message = self.read_message(time.monotonic() + STARTUP_TIMEOUT_S)
        if message is None or message.get("event") != "ready":
            self.kill()
            tail = _tail(self.log_path)
            refused = [line for line in tail.splitlines() if line.startswith("bwrap:")]
            if refused:
                raise SandboxUnavailable(f"bubblewrap could not set up the sandbox: {refused[-1]}")
            raise RuntimeError(f"sandbox worker {self.slot} ({self.device}) failed to start:\n{tail}")
        if not self.confined:
            self.uid = message.get("uid")
        sandbox_notes = [str(n) for n in message.get("notes", [])]
        self.notes = [str(n) for n in message.get("backend_notes", [])] + sandbox_notes
        for note in sandbox_notes:  # a weaker sandbox deserves a warning; backend notes are information
            self.warn_once(note)
        self.ready = True

    def warn_once(self, note: str) -> None:
        if note not in self._warned:
            self._warned.add(note)
            log.warning("sandbox worker %d (%s): %s", self.slot, self.device, note)

    def send(self, message: dict[str, Any]) -> bool:
        proc = self.proc
        if proc is None or proc.stdin is None:
            return False
        try:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            return True
        except (OSError, ValueError):  # dead worker, or closed by close() meanwhile
            return False

    def read_message(self, deadline: float) -> dict[str, Any] | None:
        """Next JSON line from the worker, or None on EOF, on a closed pipe or when the deadline passes."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return None
        try:
            fd = proc.stdout.fileno()
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                readable, _, _ = select.select([fd], [], [], left)
                if not readable:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None
                self._buffer += chunk
        except (OSError, ValueError):
            return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def kill(self) -> None:
        """Kill the worker and anything its current job left running."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
        if self.confined:  # its PID namespace died with it; anything of its uid that is left goes too
            if self.uid is not None:
                worker_mod.sweep(None, self.uid)
        elif self.child_pid is not None or self.uid is not None:
            worker_mod.sweep(self.child_pid, self.uid)
        self.child_pid = None
        self.ready = False

    def release(self) -> None:
        self.kill()
        if self._uid_lock is not None:
            self._uid_lock.close()
            self._uid_lock = None


class WorkerPool:
    """Warm sandboxed workers for one device; ``run``/``submit`` a ``kernel_medic.*:function`` job.

    ``sandbox``: ``bwrap`` (default) or ``weak``; None reads ``KMEDIC_SANDBOX``. Raises ``SandboxUnavailable``
    when bubblewrap is asked for and missing.
    """

    def __init__(
        self,
        device: str = "cpu",
        size: int | None = None,
        limits: SandboxLimits | None = None,
        sandbox: str | None = None,
    ) -> None:
        get_backend(device)  # unknown device: fail here, not in a worker
        self.sandbox = confinement.sandbox_mode(sandbox)
        bwrap = confinement.find_bwrap() if self.sandbox == "bwrap" else None
        self.device = device
        self.size = max(1, size if size is not None else (os.cpu_count() or 1))
        self.limits = limits or SandboxLimits()
        remove_stale_folders(tempfile.gettempdir())
        self._base = tempfile.mkdtemp(prefix=FOLDER_PREFIX)
        with open(os.path.join(self._base, OWNER_FILE), "w", encoding="utf-8") as fh:
            fh.write(_owner() + "\n")
        # Children under other uids must pass through to their own job dir, but not list the others.
        os.chmod(self._base, 0o711)
        self._jobs_dir = os.path.join(self._base, "jobs")
        os.mkdir(self._jobs_dir, 0o711)
        self._workers = [
            _Worker(i, device, self._jobs_dir, self._base, bwrap, self.limits) for i in range(self.size)
        ]
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        for w in self._workers:  # start them all now so the slow imports overlap
            w.spawn()
            self._idle.put(w)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.size, thread_name_prefix="kmedic-sandbox"
        )

    @property
    def worker_notes(self) -> list[str]:
        """Start-up notes of all workers (waits for them to be ready)."""
        notes: list[str] = []
        for w in self._borrow_all():
            try:
                for note in w.notes:
                    if note not in notes:
                        notes.append(note)
            finally:
                self._idle.put(w)
        return notes

    @property
    def sandbox_uids(self) -> list[int]:
        """The unprivileged uids job children run under (empty when not running as root)."""
        uids = []
        for w in self._borrow_all():
            if w.uid is not None:
                uids.append(w.uid)
            self._idle.put(w)
        return uids

    def _borrow_all(self) -> list[_Worker]:
        borrowed = []
        for _ in range(self.size):
            w = self._idle.get()
            try:
                w.ensure_ready()
            except BaseException:
                self._idle.put(w)
                for b in borrowed:
                    self._idle.put(b)
                raise
            borrowed.append(w)
        return borrowed

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(
        self, job: str, payload: dict, limits: SandboxLimits | None = None, evidence: bytes | None = None
    ) -> concurrent.futures.Future[JobOutcome]:
        _check_job_name(job)
        if self._closed:
            raise RuntimeError("WorkerPool is closed")
        return self._executor.submit(self.run, job, payload, limits, evidence)

    def run(
        self, job: str, payload: dict, limits: SandboxLimits | None = None, evidence: bytes | None = None
    ) -> JobOutcome:
        """Run ``job`` on ``payload`` in a fresh child of a warm worker.

        ``evidence``: the initial content of a file the job may write in place (its path and size arrive as
        ``payload["evidence_file"]`` and ``payload["evidence_size"]``); this process opens it before the job
        and reads it back through that same descriptor afterwards, into ``JobOutcome.evidence``.
        """
        _check_job_name(job)
        if self._closed:
            raise RuntimeError("WorkerPool is closed")
        limits = limits or self.limits
        if self.sandbox == "bwrap" and limits.network != self.limits.network:
            raise ValueError("with bubblewrap the network is fixed per pool: set it in the pool's limits")
        w = self._idle.get()
        try:
            if self._closed:
                raise RuntimeError("WorkerPool is closed")
            w.ensure_ready()
            if w.confined:
                job_dir, inside = w.slot_dir, confinement.JOB_MOUNT
            else:
                job_dir = inside = tempfile.mkdtemp(prefix="job-", dir=self._jobs_dir)
            evidence_fd = None
            try:
                if evidence is not None:
                    evidence_fd = _place_evidence(
                        os.path.join(job_dir, EVIDENCE_FILE), evidence, None if w.confined else w.uid
                    )
                    payload = {
                        **payload,
                        "evidence_file": os.path.join(inside, EVIDENCE_FILE),
                        "evidence_size": len(evidence),
                    }
                torch.save(payload, os.path.join(job_dir, worker_mod.PAYLOAD_FILE))
                outcome = self._run_on(w, job, job_dir, inside, limits)
                if evidence_fd is not None:
                    outcome.evidence = _read_evidence(evidence_fd, len(evidence or b""))
                return _scrubbed(outcome)
            finally:
                if evidence_fd is not None:
                    os.close(evidence_fd)
                if w.confined:
                    for name in (worker_mod.PAYLOAD_FILE, *SLOT_FILES):
                        try:
                            _truncate(os.path.join(job_dir, name))
                        except OSError:
                            pass
                else:
                    shutil.rmtree(job_dir, ignore_errors=True)
        finally:
            self._idle.put(w)

    def _run_on(
        self, w: _Worker, job: str, job_dir: str, dir_inside: str, limits: SandboxLimits
    ) -> JobOutcome:
        start = time.monotonic()
        deadline = start + limits.timeout_s + REPLY_GRACE_S
        sent = w.send({"job": job, "dir": dir_inside, "limits": asdict(limits)})
        started = w.read_message(deadline) if sent else None
        if started is not None and started.get("event") == "started":
            w.child_pid = int(started["pid"])
            reply = w.read_message(deadline)
        else:
            reply = None
        if reply is None or reply.get("event") != "done":
            # The worker died or hung: it goes, a fresh one takes its slot on next use.
            was_timeout = time.monotonic() >= deadline
            w.kill()
            outcome = self._outcome(job_dir, None, time.monotonic() - start)
            if was_timeout:
                outcome.status, outcome.error = (
                    "timeout",
                    (f"exceeded the {limits.timeout_s} s wall-clock limit (sandbox worker unresponsive)"),
                )
            else:
                outcome.status, outcome.error = "crash", "sandbox worker died while running the job"
            outcome.result = outcome.error_type = outcome.traceback = None
            return outcome
        w.child_pid = None
        outcome = self._outcome(job_dir, reply, float(reply.get("wall_s", time.monotonic() - start)))
        if reply.get("timeout"):
            outcome.status, outcome.error = "timeout", f"exceeded the {limits.timeout_s} s wall-clock limit"
            outcome.result = outcome.error_type = outcome.traceback = None
        for note in outcome.notes:
            w.warn_once(note)
        return outcome

    def _outcome(self, job_dir: str, reply: dict[str, Any] | None, wall_s: float) -> JobOutcome:
        out = JobOutcome(
            status="crash",
            result=None,
            error_type=None,
            error=None,
            traceback=None,
            wall_s=wall_s,
            stdout_tail=_tail(os.path.join(job_dir, worker_mod.STDOUT_FILE)),
            stderr_tail=_tail(os.path.join(job_dir, worker_mod.STDERR_FILE)),
            notes=[str(n) for n in (reply or {}).get("notes", [])],
            cpu_s=float((reply or {}).get("cpu_s") or 0.0),
        )
        if reply is None:
            return out
        sig, code = reply.get("signal"), reply.get("code")
        if sig is not None:
            out.error = f"killed by signal {sig} ({_signal_name(int(sig))})"
            return out
        envelope = self._load_result(os.path.join(job_dir, worker_mod.RESULT_FILE))
        if code != 0 or envelope is None:
            out.error = f"exited with code {code} before returning a result"
            return out
        if isinstance(envelope, str):
            out.status, out.error_type, out.error = "error", "UnsafeResult", envelope
            return out
        if envelope.get("ok") is True and isinstance(envelope.get("result"), dict):
            out.status, out.result = "ok", envelope["result"]
            return out
        out.status = "error"  # the child wrote these: bounded here, whatever it claims
        out.error_type = str(envelope.get("error_type", "Exception"))[:100]
        out.error = " ".join(str(envelope.get("error", out.error_type)).split())[: worker_mod.ERROR_CHARS]
        out.traceback = str(envelope.get("traceback", ""))[-worker_mod.TRACEBACK_CHARS :]
        return out

    @staticmethod
    def _load_result(path: str) -> dict[str, Any] | str | None:
        """The child's envelope, a string saying why it was refused, or None when there is none."""
        data = _read_untrusted(path)
        if data is None:
            return None
        try:
            envelope = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except Exception as exc:
            return f"the job's result could not be loaded safely: {worker_mod.one_line(exc)}"
        if not isinstance(envelope, dict):
            return "the job's result file is malformed"
        return envelope

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
        for w in self._workers:
            w.release()
        shutil.rmtree(self._base, ignore_errors=True)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
