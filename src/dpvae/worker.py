"""A warm worker for local workflow builds: one process imports torch and the project once, then forks a child
for each `python -m dpvae ...` job. A smoke build's ~300 short jobs each spent 3-9 CPU-seconds starting Python
and importing torch, opacus, scipy and scikit-learn before any work; a forked child starts in milliseconds.

The Snakefile starts one (config `local_worker`, local execution without conda only) and exports
DPVAE_WORKER, the path of its Unix socket. `python -m dpvae` then sends its command line, environment,
working directory and file descriptors 0-3 to the worker (SCM_RIGHTS) and exits with the child's status.
Without DPVAE_WORKER, or while the worker is still importing (its socket appears only when it is ready),
the command runs in its own process as before: same code, same result. A child is killed with its process
group when its client goes away (Snakemake cancelled the job); the worker exits when the process that
started it does. Under a worker, Snakemake's benchmark files time the client, so CPU time and memory of a
job are not measured; paper-scale builds leave the worker off.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "DPVAE_WORKER"
STD_FDS = (0, 1, 2, 3)  # stdin, stdout, stderr and the rules' error channel (DPVAE_ERROR_FD=3)
_HEADER = struct.Struct("!I")
_STATUS = struct.Struct("!i")


# ---------------------------------------------------------------- client (python -m dpvae, no heavy import)


def submit(argv: list[str]) -> int | None:
    """Run `dpvae <argv>` in the worker named by $DPVAE_WORKER; its exit status, or None if there is no
    worker listening (the caller then runs the command itself)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return None
    fds = [fd for fd in STD_FDS if _is_open(fd)]  # before the socket takes the lowest free number
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    with sock:
        request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "fds": fds}).encode()
        socket.send_fds(sock, [_HEADER.pack(len(request)) + request], fds)
        reply = _recv_exactly(sock, _STATUS.size)
    if reply is None:  # the worker died under us: say so, fail the job
        print("dpvae: error: the warm worker went away while running this job", file=sys.stderr)
        return 1
    return _STATUS.unpack(reply)[0]


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _recv_exactly(sock: socket.socket, n: int, data: bytes = b"") -> bytes | None:
    """`data` completed to `n` bytes from `sock`; None if the peer closed first."""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


# ---------------------------------------------------------------------------------------------- the worker


def preload() -> None:
    """Import what the stages import (not JAX: XLA starts threads at import, which do not survive fork)."""
    import matplotlib

    matplotlib.use("Agg")
    import dp_accounting  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    import opacus  # noqa: F401
    import pandas  # noqa: F401
    import scipy.optimize  # noqa: F401
    import scipy.stats  # noqa: F401
    import sklearn.ensemble  # noqa: F401
    import sklearn.linear_model  # noqa: F401
    import sklearn.metrics  # noqa: F401
    import torch  # noqa: F401
    import torchvision  # noqa: F401

    from dpvae import stages  # noqa: F401
    from dpvae.registry import discover

    for package in ("dpvae.methods", "dpvae.eval", "dpvae.render", "dpvae.analyses"):
        discover(package)


def serve(path: str, parent: int, warm: bool = True) -> None:
    """Preload (if `warm`), listen on `path` (created atomically when ready), fork a child per request;
    return when process `parent` is gone."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop: run the clean-up below
    if warm:
        preload()
    target = Path(path)
    staging = target.with_name(f".{target.name}.{os.getpid()}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(staging))
    listener.listen(64)
    os.replace(staging, target)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    children: dict[int, socket.socket] = {}
    try:
        while os.getppid() == parent:
            for key, _ in selector.select(timeout=0.2):
                if key.data is None:
                    conn, _ = listener.accept()
                    pid = _fork_job(conn, [listener, *children.values()], selector)
                    if pid is None:
                        conn.close()
                    else:
                        children[pid] = conn
                        selector.register(conn, selectors.EVENT_READ, pid)
                else:  # the client closed its end: the job was cancelled
                    selector.unregister(key.fileobj)
                    _kill(key.data)
            _reap(children, selector)
    finally:
        for pid in children:
            _kill(pid)
        with _gone():
            target.unlink()


def _fork_job(conn: socket.socket, server_sockets: list[socket.socket], selector: selectors.BaseSelector) -> int | None:
    """Receive one request and fork its child; the child's pid (None for a malformed request)."""
    try:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, len(STD_FDS))
        body = _recv_exactly(conn, _HEADER.unpack_from(message)[0], message[_HEADER.size :])
        if body is None:
            raise ConnectionError("request cut short")
        request = json.loads(body)
    except (OSError, ValueError, struct.error) as error:
        print(f"dpvae worker: bad request: {error}", file=sys.stderr, flush=True)
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    selector.close()
    for sock in (*server_sockets, conn):
        sock.close()
    os._exit(_run_child(request, dict(zip(request["fds"], fds))))


def _run_child(request: dict, fds: dict[int, int]) -> int:
    """In the forked child: take over the client's files, directory and environment, run the command."""
    try:
        os.setpgid(0, 0)
        for target, fd in sorted(fds.items()):
            os.dup2(fd, target)
        for target in STD_FDS:
            if target not in fds:
                with _gone():
                    os.close(target)
        for fd in fds.values():
            if fd not in STD_FDS:
                os.close(fd)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.pop(ENV_VAR, None)
        sys.argv = ["python -m dpvae", *request["argv"]]
        if (threads := os.environ.get("OMP_NUM_THREADS", "")).isdigit():
            # the libraries read OMP_NUM_THREADS when loaded, in the worker: apply the job's value here
            import torch
            from threadpoolctl import threadpool_limits

            torch.set_num_threads(int(threads))
            threadpool_limits(int(threads))
        from dpvae.cli import main

        status = main(request["argv"])
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a job's traceback belongs in its log, then a failed status
        traceback.print_exc()
        status = 1
    with _gone():
        sys.stdout.flush()
        sys.stderr.flush()
    return int(status or 0)


def _reap(children: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    """Collect finished children and send each client its child's exit status."""
    while children:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(wait_status)
        with _gone():
            selector.unregister(conn)
        with _gone():
            conn.sendall(_STATUS.pack(code if code >= 0 else 128 - code))
        conn.close()


def _gone() -> contextlib.suppress:
    """Ignore the errors of a file, socket or child that is already gone."""
    return contextlib.suppress(OSError, KeyError, ValueError)


def _kill(pid: int) -> None:
    with _gone():
        os.killpg(pid, signal.SIGTERM)


@dataclass
class LocalWorker:
    """A worker serving the jobs of the current process (Snakemake's), started by `start`."""

    process: subprocess.Popen
    folder: Path


def start(src: str, log: Path) -> LocalWorker:
    """Start a worker for the jobs of this process (importing dpvae from `src`; its messages to `log`) and
    export its socket in os.environ, which the jobs inherit. Jobs run alone until it listens.

    The worker gets a process group of its own but stays in this process's session: under Linux's autogroup
    scheduling a session of its own is a scheduling group of its own, whose jobs then weigh as much as everything
    in Snakemake's session together, whatever the nice values (tests/run.sh's niced second pytest process took
    half a core from them, and a two-thread job waited on it at every OpenMP barrier)."""
    folder = Path(tempfile.mkdtemp(prefix="dpvae-worker-"))
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    with open(log, "a") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "dpvae.worker", str(folder / "socket"), str(os.getpid())],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            process_group=0,  # the terminal's Ctrl-C is not for it; its session stays Snakemake's (above)
        )
    os.environ[ENV_VAR] = str(folder / "socket")
    return LocalWorker(process, folder)


#: seconds a stopped worker gets to clean up (SIGTERM) before it is killed
STOP_GRACE_S = 10


def stop(worker: LocalWorker) -> None:
    """Stop it (it also stops by itself when this process exits) and stop exporting its socket."""
    os.environ.pop(ENV_VAR, None)
    worker.process.terminate()
    try:
        worker.process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:  # a worker slow to exit must not fail a finished build (onsuccess calls this)
        worker.process.kill()
        worker.process.wait()
    shutil.rmtree(worker.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """python -m dpvae.worker SOCKET PARENT_PID: serve until the parent process exits."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not args[1].isdigit():
        sys.exit("usage: python -m dpvae.worker SOCKET PARENT_PID")
    serve(args[0], int(args[1]))


if __name__ == "__main__":
    main()
