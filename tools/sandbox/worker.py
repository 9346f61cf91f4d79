"""Sandbox worker: preloads torch + triton once, then forks a locked-down child per job.

Run as ``python -I -m kernel_medic.tools.sandbox.worker --device cpu --jobs-dir DIR [--confined]``; spoken to
only by ``kernel_medic.tools.sandbox.pool.WorkerPool`` with one JSON line per message over stdin/stdout. The
worker never reads what a child produced (payload and result files are the caller's business), so untrusted
data never reaches it. ``--confined``: the worker already runs inside bubblewrap (see ``confinement.py``), so
namespaces and the view of the filesystem are set; it drops to ``--drop-uid`` first when started as root, and
after each job kills every other process of its sandbox and empties the sandbox's /tmp, /var/tmp, /dev/shm.
"""

from __future__ import annotations

import argparse
import codecs
import ctypes
import errno
import fcntl
import importlib
import json
import os
import resource
import select
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
from typing import IO, Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36

UID_BASE = 60000
UID_COUNT = 1000
UID_LOCK_DIR = "/tmp/kernel-medic-sandbox-uids"
RESULT_FILE = "result.pt"
PAYLOAD_FILE = "payload.pt"
STDOUT_FILE = "stdout.txt"
STDERR_FILE = "stderr.txt"
PRIVATE_DIR = "private"
CONFINED_HOME = "/tmp/home"
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
TRACEBACK_CHARS = 8000
ERROR_CHARS = 500

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(
        _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {target}",
    )


def one_line(exc: BaseException) -> str:
    """``Type: message`` squeezed onto one bounded line."""
    try:
        msg = " ".join(str(exc).split())
    except Exception:  # a hostile __str__ must not take the reporting down with it
        msg = "<unprintable message>"
    text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


# ---------------------------------------------------------------- process sweeping


def _proc_status(pid: int) -> dict[str, str]:
    fields: dict[str, str] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def matching_pids(
    uid: int | None = None, pgid: int | None = None, ppid: int | None = None, everything: bool = False
) -> list[int]:
    """Live processes owned by ``uid`` (real uid), in process group ``pgid`` or children of ``ppid``.

    ``everything``: every process but this one and PID 1 (inside a sandbox's own PID namespace).
    """
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (me, 1 if everything else -1):
            continue
        try:
            st = _proc_status(int(name))
        except OSError:
            continue
        if st.get("State", "").startswith("Z") and st.get("PPid") != str(me):
            continue
        hit = (
            everything
            or (uid is not None and st.get("Uid", "").split()[:1] == [str(uid)])
            or (pgid is not None and st.get("NSpgid", "").split()[-1:] == [str(pgid)])
            or (ppid is not None and st.get("PPid") == str(ppid))
        )
        if hit:
            found.append(int(name))
    return found


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep(
    pgid: int | None,
    uid: int | None,
    ppid: int | None = None,
    budget_s: float = 10.0,
    everything: bool = False,
) -> bool:
    """SIGKILL the job's process group and everything it left behind until none is left.

    Repeats because a fork bomb keeps forking while it is being killed. Returns whether it got them all.
    """
    deadline = time.monotonic() + budget_s
    while True:
        hit = False
        if pgid is not None:
            try:
                os.killpg(pgid, signal.SIGKILL)
                hit = True
            except (ProcessLookupError, PermissionError):
                pass
        for pid in matching_pids(uid, pgid, ppid, everything):
            try:
                os.kill(pid, signal.SIGKILL)
                hit = True
            except (ProcessLookupError, PermissionError):
                pass
        _reap_all()
        if not hit:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


# ---------------------------------------------------------------- worker set-up


def _claim_uid(slot: int) -> tuple[int, IO[str]]:
    """A sandbox uid no other worker on this machine holds; the lock lives as long as the worker."""
    os.makedirs(UID_LOCK_DIR, mode=0o700, exist_ok=True)
    info = os.lstat(UID_LOCK_DIR)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise OSError(f"{UID_LOCK_DIR} is not a private root-owned directory")
    order = [UID_BASE + slot % UID_COUNT] + [UID_BASE + i for i in range(UID_COUNT)]
    for uid in order:
        fh = open(os.path.join(UID_LOCK_DIR, str(uid)), "w")  # noqa: SIM115 - held for the worker's life
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        sweep(None, uid)  # leftovers of a worker that died hard
        return uid, fh
    raise OSError("all sandbox uids are taken")


def _blocked_ancestor(path: str, uid: int) -> str | None:
    """The first directory on ``path`` that ``uid`` (no groups) cannot search, if any."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        try:
            info = os.stat(current)
        except OSError:
            return None
        if stat.S_ISDIR(info.st_mode):
            bit = stat.S_IXUSR if info.st_uid == uid else stat.S_IXOTH
            if not info.st_mode & bit:
                return current
    return None


def _needed_paths(jobs_dir: str) -> list[tuple[str, bool]]:
    """Paths a job child must reach: the Python install, import paths, the package, the job dirs."""
    import kernel_medic

    paths = {sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(p for p in sys.path if p)
    paths.update(os.path.dirname(p) for p in kernel_medic.__path__)
    out = {os.path.realpath(p): False for p in paths if os.path.isdir(p)}
    out[os.path.realpath(jobs_dir)] = True
    return sorted(out.items())


def expose_paths_to(uid: int, jobs_dir: str) -> list[str]:
    """Give this worker a private mount namespace where ``uid`` can reach what jobs need.

    A directory such as a 0700 /root that hides the Python install is covered by an empty tmpfs into which
    only the needed subtrees are bind-mounted (read-only, the job dirs read-write). The rest stays hidden.
    """
    blocked: dict[str, list[tuple[str, bool]]] = {}
    for path, writable in _needed_paths(jobs_dir):
        top = _blocked_ancestor(path, uid)
        if top is not None:
            if top == path:
                raise OSError(f"{path} itself is not searchable by uid {uid}")
            blocked.setdefault(top, []).append((path, writable))
    if not blocked:
        return []
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    for top in sorted(blocked, key=len):
        subs = sorted(blocked[top])
        keep = [(p, w) for p, w in subs if not any(p != q and p.startswith(q + "/") for q, _ in subs)]
        fds = [(p, w, os.open(p, os.O_PATH | os.O_DIRECTORY)) for p, w in keep]
        _mount("tmpfs", top, "tmpfs", 0, "mode=0755,size=1m")
        for path, writable, fd in fds:
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            if not writable:
                _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
            os.close(fd)
    return sorted(blocked)


def _mount_points_under(paths: tuple[str, ...]) -> list[str]:
    """Mount points strictly below ``paths``, from this process's mount table."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            fields = [line.split() for line in fh]
        points = [codecs.decode(f[4], "unicode_escape") for f in fields if len(f) > 4]
    except OSError:
        return []
    return [p for p in points if any(p.startswith(top.rstrip("/") + "/") for top in paths)]


def empty_dirs(paths: tuple[str, ...] = SCRATCH_DIRS) -> None:
    """Delete everything under ``paths`` (a job's leftovers in the sandbox's scratch folders)."""

    def unlock(func: Any, path: str, _exc: Any) -> None:
        try:  # a folder the job made unreadable or unwritable: give it back to its owner and retry
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
                shutil.rmtree(path, ignore_errors=True)
            else:
                func(path)
        except OSError:
            pass

    mounts = _mount_points_under(paths)
    for top in paths:
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for name in names:
            path = os.path.join(top, name)
            if any(m == path or m.startswith(path + "/") for m in mounts):
                continue  # what the sandbox mounted there (a Python install under /tmp) is not a leftover
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, onerror=unlock)
                else:
                    os.unlink(path)
            except OSError:
                pass


def _net_flags() -> int:
    # Without root a user namespace is what grants the right to make a network namespace.
    return CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET


def probe_child(uid: int | None, confined: bool = False) -> list[str]:
    """Try the lock-down a job child will get, in a throwaway child; notes say what does not work."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        problems = []
        try:
            if not confined:  # inside bubblewrap the worker's namespaces are already the job's
                _check(_libc.unshare(_net_flags()), "unshare(CLONE_NEWNET)")
        except OSError as exc:
            problems.append(f"network isolation unavailable: {exc}")
        if uid is not None:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.listdir(os.path.dirname(os.__file__))
                importlib.import_module("kernel_medic.tools")
            except Exception as exc:
                problems.append(f"sandbox uid unusable: {one_line(exc)}")
        os.write(write_fd, json.dumps(problems).encode())
        os._exit(0)
    os.close(write_fd)
    data = _read_all(read_fd)
    os.waitpid(pid, 0)
    try:
        return list(json.loads(data))
    except ValueError:
        return ["sandbox probe failed"]


def _read_all(fd: int) -> bytes:
    chunks = []
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(65536):
            chunks.append(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------- the job child


def _set_limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))


def _current_vsize() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _user_process_count(uid: int) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                st = _proc_status(int(name))
            except OSError:
                continue
            if st.get("Uid", "").split()[:1] == [str(uid)]:
                count += int(st.get("Threads", "1"))
    return count


def _check_result(value: Any, where: str = "result") -> None:
    """Only what ``torch.load(weights_only=True)`` can take back safely may leave the child."""
    import torch

    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_result(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise TypeError(f"{where} has a key of unsupported type {type(key).__name__}")
            _check_result(item, f"{where}[{key!r}]")
        return
    raise TypeError(f"{where} has unsupported type {type(value).__name__}")


def _lock_down(
    job_dir: str, limits: dict[str, Any], uid: int | None, slot_home: str, confined: bool
) -> list[str]:
    notes = []
    if not limits.get("network", False) and not confined:
        try:
            _check(_libc.unshare(_net_flags()), "unshare(CLONE_NEWNET)")
        except OSError as exc:
            notes.append(f"network isolation unavailable: {exc}")
    _set_limit(resource.RLIMIT_CPU, int(limits["cpu_s"]))
    _set_limit(resource.RLIMIT_AS, _current_vsize() + int(float(limits["address_space_gb"]) * 2**30))
    _set_limit(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    # Files the job writes stop at file_size_mb; only the harness's own result may grow to result_mb (the
    # hard limit, which the soft one is raised to just before the result is written).
    result_bytes = int(limits.get("result_mb", 2048)) * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    hard = result_bytes if hard == resource.RLIM_INFINITY else min(result_bytes, hard)
    soft = min(int(limits.get("file_size_mb", 64)) * 2**20, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    # RLIMIT_NPROC counts threads, so leave room for torch's per-core pools on top of the process budget.
    headroom = int(limits["max_processes"]) + (os.cpu_count() or 1)
    if uid is not None:
        _set_limit(resource.RLIMIT_NPROC, headroom)
        os.chown(job_dir, uid, uid)
        os.mkdir(slot_home, 0o700)
        os.chown(slot_home, uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    else:
        _set_limit(resource.RLIMIT_NPROC, _user_process_count(os.getuid()) + headroom)
        os.mkdir(slot_home, 0o700)
    return notes


def run_child(
    job: str,
    job_dir: str,
    limits: dict[str, Any],
    uid: int | None,
    notes_fd: int,
    close_fds: list[int],
    confined: bool = False,
) -> None:
    """Body of the forked job child; never returns."""
    me = os.getpid()
    code = 0
    try:
        os.setsid()
        for fd in close_fds:
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        for target, name in ((1, STDOUT_FILE), (2, STDERR_FILE)):
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            fd = os.open(os.path.join(job_dir, name), flags, 0o644)
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(os.devnull)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        module_name, _, func_name = job.partition(":")
        fn = import_error = None
        try:  # our own (trusted) module, imported before the lock-down so no permission stands in its way
            fn = getattr(importlib.import_module(module_name), func_name)
        except Exception as exc:
            import_error = exc
        home = CONFINED_HOME if confined else os.path.join(job_dir, PRIVATE_DIR)
        notes = _lock_down(job_dir, limits, uid, home, confined)
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        os.environ.update(
            HOME=home,
            TMPDIR=home,
            TRITON_CACHE_DIR=os.path.join(home, ".triton"),
            USER=f"sandbox{os.getuid()}",
            LOGNAME=f"sandbox{os.getuid()}",
        )
        tempfile.tempdir = None
        os.write(notes_fd, json.dumps(notes).encode())
        os.close(notes_fd)
        os.chdir(home)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(120)
    import torch

    try:
        try:
            if import_error is not None:
                raise import_error
            payload = torch.load(os.path.join(job_dir, PAYLOAD_FILE), weights_only=False)
            result = fn(payload)  # type: ignore[misc]
            if os.getpid() != me:
                os._exit(0)  # a process the job forked came back through here: it has no say
            if not isinstance(result, dict):
                raise TypeError(f"job returned {type(result).__name__}, expected dict")
            _check_result(result)
            envelope: dict[str, Any] = {"ok": True, "result": result}
        except SystemExit as exc:
            if os.getpid() != me:
                os._exit(0)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            envelope = {}
        except BaseException as exc:
            if os.getpid() != me:
                os._exit(0)
            tb = "".join(
                traceback.format_exception(
                    type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
                )
            )
            envelope = {
                "ok": False,
                "error_type": type(exc).__name__,
                "error": one_line(exc),
                "traceback": tb[-TRACEBACK_CHARS:],
            }
        if envelope:  # into the file the caller made (confined: the only writable file from the host)
            _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
            torch.save(envelope, os.path.join(job_dir, RESULT_FILE))
    except BaseException:
        traceback.print_exc()
        code = 121
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


# ---------------------------------------------------------------- the worker loop


def _wait_child(pid: int, timeout_s: float) -> tuple[int | None, bool, float]:
    """Wait status of ``pid`` and the CPU seconds it used, or (None, True, 0.0) once the deadline passes.

    CPU time, unlike wall time, does not grow when other processes share the cores: the search ranks the
    cost of passing edits by it (a grid of a program per element costs hundreds of times more either way).
    """
    deadline = time.monotonic() + timeout_s
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pass
    try:
        delay = 0.001
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return status, False, usage.ru_utime + usage.ru_stime
            left = deadline - time.monotonic()
            if left <= 0:
                return None, True, 0.0
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.05)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def serve_job(
    request: dict[str, Any], uid: int | None, send: Any, keep_closed: list[int], confined: bool = False
) -> None:
    limits = request["limits"]
    module_name = str(request["job"]).partition(":")[0]
    if module_name.startswith("kernel_medic.") and module_name not in sys.modules:
        try:  # our own job module, once per worker: later children are forked with it loaded
            importlib.import_module(module_name)
        except Exception:
            pass  # the child imports it again and reports what is wrong
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        run_child(request["job"], request["dir"], limits, uid, write_fd, keep_closed, confined)
    os.close(write_fd)
    send({"event": "started", "pid": pid})
    status, timed_out, cpu = _wait_child(pid, float(limits["timeout_s"]))
    wall = time.monotonic() - start
    if timed_out:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            os.kill(pid, signal.SIGKILL)  # it died before its setsid()
        status = os.waitpid(pid, 0)[1]
    # Whatever the job left behind dies with it, even when it ended normally.
    complete = sweep(pid, uid, os.getpid(), everything=confined)
    if confined:
        empty_dirs()
    raw = _read_all(read_fd)
    try:
        notes = [str(n) for n in json.loads(raw)] if raw else []
    except ValueError:
        notes = []
    if not complete:
        notes.append("some processes the job started could not be killed")
    reply: dict[str, Any] = {
        "event": "done",
        "wall_s": wall,
        "cpu_s": cpu,
        "notes": notes,
        "timeout": timed_out,
        "code": None,
        "signal": None,
    }
    if os.WIFSIGNALED(status):
        reply["signal"] = os.WTERMSIG(status)
    else:
        reply["code"] = os.waitstatus_to_exitcode(status)
    send(reply)


def drop_privileges(uid: int | None) -> None:
    """Inside bubblewrap as root: become ``uid`` (no groups, no capabilities left); never gain any back."""
    if os.geteuid() == 0:
        if uid is None:
            raise SystemExit("confined worker started as root without --drop-uid")
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.geteuid() == 0 or os.getuid() == 0:
            raise SystemExit("could not leave uid 0")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    # Not dumpable: a job (same uid) can neither ptrace this worker nor read its memory through /proc.
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--slot", type=int, default=0)
    parser.add_argument("--jobs-dir", required=True)
    parser.add_argument("--confined", action="store_true", help="already inside the bubblewrap sandbox")
    parser.add_argument("--drop-uid", type=int, default=None, help="confined as root: the uid to become")
    args = parser.parse_args(argv)
    if args.confined:
        drop_privileges(args.drop_uid)

    # Only protocol lines go to the real stdout; anything a library prints lands on stderr instead.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def send(message: dict[str, Any]) -> None:
        proto.write(json.dumps(message) + "\n")
        proto.flush()

    from kernel_medic.tools.sandbox.backends import get_backend

    backend = get_backend(args.device)
    os.environ.update(backend.worker_env())
    # prepare_worker imports torch (and torch_npu) before triton, in the order each backend needs.
    backend_notes = [str(n) for n in backend.prepare_worker()]
    notes: list[str] = []
    uid: int | None = None
    keep_closed = [proto.fileno()]
    if os.geteuid() == 0 and not args.confined:
        try:
            uid, lock = _claim_uid(args.slot)
            keep_closed.append(lock.fileno())
            expose_paths_to(uid, args.jobs_dir)
        except OSError as exc:
            notes.append(f"unprivileged sandbox uid unavailable, jobs run as root: {one_line(exc)}")
            uid = None
    _check(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    probe_notes = probe_child(uid, args.confined)
    if uid is not None and any(n.startswith("sandbox uid unusable") for n in probe_notes):
        uid = None
        probe_notes = [n + "; jobs run as root" if n.startswith("sandbox uid") else n for n in probe_notes]
    notes.extend(probe_notes)
    send({"event": "ready", "pid": os.getpid(), "uid": uid, "backend_notes": backend_notes, "notes": notes})

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            serve_job(json.loads(line), uid, send, keep_closed, args.confined)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                return 0
            raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
