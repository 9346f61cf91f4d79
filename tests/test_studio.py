"""`langgraph dev` serves the graph of langgraph.json offline; Studio's API runs and inspects a repair."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "softmax_tail"
LANGGRAPH = Path(sys.executable).parent / "langgraph"
STARTUP_TIMEOUT_S = 45.0
RUN_TIMEOUT_S = 40.0
STOP_GRACE_S = 10.0
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
}
GRAPH_NODES = {
    "intake",
    "evaluate",
    "diagnose",
    "retrieve",
    "instrument",
    "patch",
    "verify",
    "audit",
    "distill",
    "guard",
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
API_URL = re.compile(r"API:\s*(http://[^\s]+)")


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    log_path: Path
    url: str

    def log(self) -> str:
        return read_log(self.log_path)


def read_log(path: Path) -> str:
    return ANSI.sub("", path.read_text(errors="replace"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields after its closing one are fixed.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited and waits to be reaped


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(
        alive(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit() and _pgid(int(p.name)) == pgid
    )


def _pgid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


def wait_until_serving(proc: subprocess.Popen[bytes], log_path: Path) -> str:
    """The server's real URL (it moves to another port when ours is taken) once /ok answers."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    url = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{read_log(log_path)}")
        if url is None:
            match = API_URL.search(read_log(log_path))
            url = match.group(1) if match else None
        if url is not None:
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                    if response.status == 200:
                        return url
            except (urllib.error.URLError, OSError):
                pass
        time.sleep(0.3)
    pytest.fail(f"langgraph dev did not serve within {STARTUP_TIMEOUT_S:.0f} s:\n{read_log(log_path)}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group, SIGKILL after a grace period."""
    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    # The in-memory server pickles its threads and checkpoints into ./.langgraph_api when it stops.
    persistence_dir = REPO / ".langgraph_api"
    had_persistence_dir = persistence_dir.exists()
    env = {**os.environ, **OFFLINE_ENV, "KMEDIC_HOME": str(tmp_path / "home")}
    log_path = tmp_path / "langgraph-dev.log"
    cmd = [
        str(LANGGRAPH),
        "dev",
        "--port",
        str(free_port()),
        "--host",
        "127.0.0.1",
        "--no-browser",
        "--no-reload",
    ]
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    sandbox_workers: list[int] = []
    try:
        srv = Server(proc, log_path, wait_until_serving(proc, log_path))
        yield srv
        # Sandbox workers run in their own sessions: the server must close them when it stops.
        sandbox_workers = children_of(proc.pid)
    finally:
        stop(proc)
        if not had_persistence_dir:  # a developer's own Studio threads stay
            shutil.rmtree(persistence_dir, ignore_errors=True)
    assert proc.poll() is not None, "langgraph dev survived SIGTERM and SIGKILL"
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and (group_alive(proc.pid) or any(map(alive, sandbox_workers))):
        time.sleep(0.2)
    assert not group_alive(proc.pid), "processes of langgraph dev's group outlived it"
    leaked = [pid for pid in sandbox_workers if alive(pid)]
    assert not leaked, f"sandbox workers {leaked} outlived langgraph dev"


def node_path(history: list[dict[str, Any]]) -> list[str]:
    """The nodes the run went through, oldest first (each checkpoint names the node to run next)."""
    return [node for state in reversed(history) for node in state["next"]]


def is_subsequence(wanted: list[str], path: list[str]) -> bool:
    steps = iter(path)
    return all(node in steps for node in wanted)


def test_langgraph_dev_repairs_the_example_and_shows_its_checkpoints(server: Server, tmp_path: Path) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url, timeout=RUN_TIMEOUT_S)
    assistants = client.assistants.search(graph_id="kernel_medic")
    assert assistants, f"no assistant for graph kernel_medic:\n{server.log()}"
    assistant_id = assistants[0]["assistant_id"]

    drawn = client.assistants.get_graph(assistant_id)  # what Studio draws
    assert GRAPH_NODES <= {node["id"] for node in drawn["nodes"]}

    trace_path = tmp_path / "studio-run.jsonl"
    thread = client.threads.create()
    final = client.runs.wait(
        thread["thread_id"],
        assistant_id,
        input={
            "reference_path": str(EXAMPLE),
            "candidate_path": "",
            "config": {"strategy": "offline", "device": "cpu", "workers": 1},
            "trace_path": str(trace_path),
        },
    )
    assert isinstance(final, dict), final
    assert final.get("status") == "repaired", f"{final.get('status')}: {final.get('error')}\n{server.log()}"
    assert '-float("inf")' in final["best_source"]
    assert trace_path.stat().st_size > 0  # the nodes traced the run from inside the server

    history = client.threads.get_history(thread["thread_id"], limit=100)
    assert len(history) >= 6
    assert history[0]["next"] == [] and history[0]["values"]["status"] == "repaired"
    path = node_path(history)
    assert is_subsequence(["intake", "evaluate", "patch", "verify", "audit", "distill"], path), path
    assert "Blocking call" not in server.log()  # sync nodes run in the server's worker threads
