"""What a worker is started inside: a bubblewrap sandbox, a clean environment, and scrubbed reports.

``bwrap`` (bubblewrap) gives every warm worker its own user (when not root), PID, IPC, UTS, network and mount
namespaces. The mount namespace is an empty read-only root with read-only views of only what the worker needs
(system libraries under /usr, a few files of /etc, the Python install, the virtual environment, the package's
own source folders), private size-limited tmpfs at /tmp, /var/tmp and /dev/shm, a /proc that shows only the
sandbox's processes, and one writable thing from the host: the slot's result and output files. Without
bwrap the pool refuses to start (`SandboxUnavailable`) unless ``KMEDIC_SANDBOX=weak`` asks for the weaker
sandbox (namespaces and a uid drop done by the worker itself, the host filesystem visible).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import sys
from typing import Any

MODES = ("bwrap", "weak")
SANDBOX_ENV = "KMEDIC_SANDBOX"
BWRAP_ENV = "KMEDIC_BWRAP"
# Where the slot's files appear inside the sandbox.
JOB_MOUNT = "/job"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
SECRET_MIN_CHARS = 8
REDACTED = "[redacted]"
# Environment a worker may inherit: locale, device visibility, library paths and toolchain/Triton knobs.
ENV_NAMES = frozenset(
    {
        "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "CC", "CXX", "OMP_NUM_THREADS",
        "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    }
)
ENV_PREFIXES = ("TRITON_", "ASCEND_", "CUDA_")
_ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf",
    "ascend_install.info", "ascend_filelist.info",
)
_DEVICE_NODES = {
    "cuda": ("/dev/nvidia*", "/dev/nvidia-caps"),
    "npu": ("/dev/davinci*", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/svm0"),
}


# seccomp (x86_64 only; elsewhere none): calls a job has no use for that widen the kernel's attack surface or
# reach outside the namespaces — new namespaces and mounts, ptrace and cross-process memory, keyrings, BPF,
# perf, userfaultfd, io_uring, module loading. clone3 answers ENOSYS so the C library falls back to clone,
# whose flags (unlike clone3's) the filter can read: clone with a namespace flag is refused too.
_AUDIT_ARCH_X86_64 = 0xC000003E
_SECCOMP_DENY_X86_64 = (
    272, 308, 165, 166, 155, 161, 101, 310, 311, 250, 248, 249, 321, 298, 323, 246, 320, 175, 313, 176,
    303, 304, 163, 167, 168, 169, 425, 426, 427, 428, 429, 430, 431, 432, 442,
)  # unshare setns mount umount2 pivot_root chroot ptrace process_vm_readv/writev keyctl add_key
#   request_key bpf perf_event_open userfaultfd kexec_load kexec_file_load init/finit/delete_module
#   name_to_handle_at open_by_handle_at acct swapon swapoff reboot io_uring_* open_tree move_mount fsopen
#   fsconfig fsmount mount_setattr
_CLONE_X86_64, _CLONE3_X86_64 = 56, 435
_CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET


def seccomp_program() -> bytes | None:
    """A classic-BPF seccomp filter for ``bwrap --seccomp``; None where the machine is not x86_64."""
    import platform
    import struct

    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    ld_w_abs, jeq_k, jge_k, jset_k, ret_k = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, errno_ = 0x7FFF0000, 0x00050000
    eperm, enosys = errno_ | 1, errno_ | 38
    prog: list[tuple[int, int, int, int]] = [
        (ld_w_abs, 0, 0, 4),  # arch: i386 calls (int 0x80) would dodge the numbers below
        (jeq_k, 1, 0, _AUDIT_ARCH_X86_64),
        (ret_k, 0, 0, eperm),
        (ld_w_abs, 0, 0, 0),  # syscall number; x32 numbers (bit 30 set) likewise
        (jge_k, 0, 1, 0x40000000),
        (ret_k, 0, 0, eperm),
    ]
    for nr in _SECCOMP_DENY_X86_64:
        prog += [(jeq_k, 0, 1, nr), (ret_k, 0, 0, eperm)]
    prog += [(jeq_k, 0, 1, _CLONE3_X86_64), (ret_k, 0, 0, enosys)]
    prog += [
        (jeq_k, 0, 3, _CLONE_X86_64),
        (ld_w_abs, 0, 0, 16),  # clone's flags (low 32 bits of the first argument)
        (jset_k, 0, 1, _CLONE_NAMESPACES),
        (ret_k, 0, 0, eperm),
        (ret_k, 0, 0, allow),
    ]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


class SandboxUnavailable(RuntimeError):
    """The configured sandbox cannot be set up on this machine (one line, for an exit-2 message)."""


def sandbox_mode(requested: str | None = None) -> str:
    """``bwrap`` (the default) or ``weak`` (explicit opt-in: argument or ``KMEDIC_SANDBOX``)."""
    mode = (requested or os.environ.get(SANDBOX_ENV) or "bwrap").strip().lower()
    if mode not in MODES:
        raise SandboxUnavailable(f"{SANDBOX_ENV}={mode!r}: expected bwrap or weak")
    return mode


def find_bwrap() -> str:
    """The bwrap binary (``KMEDIC_BWRAP`` overrides the search), or SandboxUnavailable."""
    override = os.environ.get(BWRAP_ENV)
    if override:
        path = override if os.access(override, os.X_OK) else None
    else:
        path = shutil.which("bwrap") or ("/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None)
    if path is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed; candidate code needs it: install it (apt-get install "
            f"bubblewrap, or `make system-deps`), or set {SANDBOX_ENV}=weak to accept the weaker sandbox"
        )
    return path


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def worker_environment(backend_env: dict[str, str], mode: str, home: str) -> dict[str, str]:
    """The allowlisted environment a worker starts with: never an API key, token or password."""
    env = {
        k: v
        for k, v in os.environ.items()
        if (k in ENV_NAMES or k.startswith(ENV_PREFIXES)) and not is_secret_name(k)
    }
    venv_bin = os.path.dirname(sys.executable)
    env["PATH"] = f"{venv_bin}:{SANDBOX_PATH}" if mode == "bwrap" else os.environ.get("PATH", SANDBOX_PATH)
    env["HOME"] = home
    env.setdefault("LANG", "C.UTF-8")
    env.update(backend_env)
    return env


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of the caller's secret-looking environment variables, longest first."""
    environ = os.environ if environ is None else environ
    found = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= SECRET_MIN_CHARS}
    return sorted(found, key=len, reverse=True)


def scrub(value: Any, secrets: list[str]) -> Any:
    """``value`` with every secret replaced in its strings (tensors and other leaves kept as they are)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, tuple):
        return tuple(scrub(v, secrets) for v in value)
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    return value


def _package_dirs() -> list[str]:
    """kernel_medic's source folders (an editable install maps sub-packages to folders of their own)."""
    import kernel_medic

    dirs = set(kernel_medic.__path__)
    for sub in ("tools", "graph", "nodes", "vectordb", "prompts"):
        try:
            spec = importlib.util.find_spec(f"kernel_medic.{sub}")
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            dirs.update(spec.submodule_search_locations)
    return sorted(os.path.realpath(d) for d in dirs if os.path.isdir(d))


def readonly_paths() -> list[str]:
    """Host folders the worker sees read-only (besides /usr and /etc's few files), outermost only."""
    paths = {
        sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
        *_package_dirs(),
    }
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    return [p for p in real if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in real)]


def _device_folders(device: str, binds: list[str]) -> list[str]:
    """Host folders a GPU worker needs that the sandbox would not otherwise show: the CUDA driver's folder
    (workers are told of it: see `backends.libcuda_dir`) and the install prefix of a compiler that CC or CXX
    names by absolute path (Triton builds its launcher with it; seen on an H200 machine: CC=/opt/gcc/bin/gcc).
    """
    if device == "cpu":
        return []
    wanted = []
    if device == "cuda":
        from kernel_medic.tools.sandbox.backends import libcuda_dir

        wanted.append(libcuda_dir())
    for name in ("CC", "CXX"):
        compiler = os.environ.get(name, "")
        if os.path.isabs(compiler) and os.path.isfile(compiler):
            folder = os.path.dirname(os.path.realpath(compiler))
            wanted.append(os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder)
    seen = ["/usr", *(f"/{name}" for name in ("lib", "lib32", "lib64", "libx32")), *binds]
    out: list[str] = []
    for folder in wanted:
        if folder is None or not os.path.isdir(folder):
            continue
        folder = os.path.realpath(folder)
        inside = any(folder == p or folder.startswith(p.rstrip("/") + "/") for p in seen + out)
        if folder != "/" and not inside:
            out.append(folder)
    return out


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_command(
    bwrap: str,
    *,
    slot_dir: str,
    writable_files: list[str],
    device: str,
    network: bool,
    tmpfs_bytes: int,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The bubblewrap command line in front of the worker's own ``python -I -m ...``."""
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-uts"]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    cmd += ["--unshare-cgroup-try"]
    if not network:
        cmd.append("--unshare-net")
    if os.geteuid() == 0:
        # Privileged bwrap keeps every capability for a uid-0 command: keep only what the worker needs to
        # drop to its own unprivileged uid first thing (after which it has none).
        cmd += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-user", "--disable-userns"]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = f"/{name}"
        if os.path.islink(host):
            cmd += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            cmd += ["--ro-bind", host, host]
    for name in _ETC:
        cmd += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    binds = [p for p in readonly_paths() if p != "/usr" and not p.startswith("/usr/")]
    binds += _device_folders(device, binds)
    # A bind under a scratch folder (a virtual environment in /tmp) goes after that folder's tmpfs, which
    # would otherwise hide it.
    scratch = ("/tmp", "/var/tmp", "/dev/shm")
    late = [p for p in binds if any(p.startswith(t + "/") for t in scratch)]
    early = [p for p in binds if p not in late]
    made: set[str] = set()
    for path in [*early, "/var/tmp"]:  # folders bwrap would otherwise make 0700 on the way
        for folder in _parents(path):
            if folder not in made:
                made.add(folder)
                cmd += ["--perms", "0755", "--dir", folder]
    for path in early:
        cmd += ["--ro-bind", path, path]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    nodes = {node for pattern in _DEVICE_NODES.get(device, ()) for node in glob.glob(pattern)}
    for node in sorted(nodes):
        cmd += ["--dev-bind", node, node]
    if device in _DEVICE_NODES:
        cmd += ["--ro-bind-try", "/sys", "/sys"]
    for tmp in scratch:
        cmd += ["--perms", "1777", "--size", str(tmpfs_bytes), "--tmpfs", tmp]
    for path in late:
        for folder in _parents(path):
            if folder not in scratch and folder not in made:
                made.add(folder)
                cmd += ["--perms", "0755", "--dir", folder]
        cmd += ["--ro-bind", path, path]
    cmd += ["--ro-bind", slot_dir, JOB_MOUNT]
    for path in writable_files:
        cmd += ["--bind", path, os.path.join(JOB_MOUNT, os.path.basename(path))]
    cmd += ["--remount-ro", "/", "--chdir", "/tmp", "--"]
    return cmd
