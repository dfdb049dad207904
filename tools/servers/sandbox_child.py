"""The sandbox's child program: ``python -I -B sandbox_child.py CONFIG_JSON`` (standard library only).

``tools/servers/sandbox.py`` starts this file in a fresh process, in a session of its own, with a
clean environment, and writes the untrusted code to its stdin. Three processes, each with one job:

* the **supervisor** (this process, outside the namespaces): joins the run's memory cgroup when the
  server made one, enters new PID, mount, network and IPC namespaces
  (``sandbox_os.enter_namespaces``; a user namespace too when not root), forks, waits, and kills
  whatever of the code's processes is left, after the run and on SIGTERM (the parent's timeout, or
  the parent's death through the parent-death signal); it is their subreaper, which matters when
  there is no PID namespace;
* the **init** (PID 1 of the new PID namespace): dies with the supervisor, hides the file system
  (``sandbox_os.hide_filesystem``), forks the worker and waits for it; when it exits the kernel
  kills every process left in the namespace, whatever session or process group it moved to;
* the **worker**: drops its privileges, sets the resource limits, installs the seccomp filter and
  the audit hook (``sandbox_hook.py``), runs the code like a REPL (the value of a final expression
  is returned) and writes a JSON result to ``result_fd``.

What could not be set up is written, one line each, to ``status_fd`` (the parent logs it loudly);
without namespaces the worker is the supervisor's direct child.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import signal
import sys

TYPE_CHECKING = False  # a type checker's own constant, without importing typing into the child
if TYPE_CHECKING:
    from typing import Any

    from tools.servers import sandbox_hook, sandbox_os
else:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves this directory out
    import sandbox_hook
    import sandbox_os

    sys.path.pop(0)
import subprocess  # noqa: E402,F401 - loaded before the audit hook, which refuses importing _posixsubprocess


def _report(config: dict[str, Any], message: str) -> None:
    try:
        os.write(config["status_fd"], (message.replace("\n", " ") + "\n").encode())
    except OSError:
        pass


def _exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _sweep_descendants() -> None:
    """Kill every process that was reparented to this subreaper, until none is left."""
    children = f"/proc/self/task/{os.getpid()}/children"
    for _ in range(1000):
        try:
            with open(children) as fh:
                pids = [int(p) for p in fh.read().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _stop(signum: int, frame: object) -> None:
    _sweep_descendants()
    os._exit(128 + signum)


def supervisor(config: dict[str, Any], code: str) -> None:
    """Enter the namespaces, start init (or the worker), wait, clean up, exit with its status.

    SIGTERM (the parent's timeout, or the parent's death) kills every descendant before exiting.
    """
    signal.signal(signal.SIGTERM, _stop)
    sandbox_os.die_with_parent(config["parent"], signal.SIGTERM)
    if config["cgroup"]:
        try:
            sandbox_os.join_cgroup(config["cgroup"])
        except OSError as exc:
            _report(config, f"no memory cgroup: could not join {config['cgroup']} ({exc})")
    if os.getuid() == 0:  # the code runs as nobody
        os.chown(config["workdir"], sandbox_os.NOBODY, sandbox_os.NOBODY)
    in_ns, uid = False, os.getuid()
    if config["namespaces"]:
        in_ns, why = sandbox_os.enter_namespaces()
        if not in_ns:
            _report(config, f"Linux namespaces are unavailable ({why})")
    sandbox_os.prctl(sandbox_os.PR_SET_CHILD_SUBREAPER, 1)
    sandbox_os.kill_first_when_out_of_memory()
    in_user_ns = in_ns and uid != 0
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if in_ns:
            init(config, code, in_user_ns)
        worker(config, code, in_user_ns)
    os.close(config["status_fd"])
    os.close(config["result_fd"])
    _, status = os.waitpid(pid, 0)
    _sweep_descendants()
    os._exit(_exit_code(status))


def init(config: dict[str, Any], code: str, in_user_ns: bool) -> None:
    """PID 1 of the sandbox: hide the file system, run the worker, reap; exiting kills the rest."""
    sandbox_os.die_with_parent(0)  # the supervisor is outside this PID namespace: ppid reads 0
    sandbox_os.prctl(sandbox_os.PR_SET_DUMPABLE, 0)
    owner = 0 if in_user_ns else sandbox_os.sandbox_uid()
    try:
        sandbox_os.hide_filesystem(config["workdir"], owner, config["file_mb"])
    except OSError as exc:
        _report(config, f"the file system could not be hidden ({exc})")
    pid = os.fork()
    if pid == 0:
        worker(config, code, in_user_ns)
    os.close(config["status_fd"])
    os.close(config["result_fd"])
    while True:
        try:
            done, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if done == pid:
            os._exit(_exit_code(status))


def worker(config: dict[str, Any], code: str, in_user_ns: bool) -> None:
    """Leave no privilege, set the limits and filters, run the code, write the result, exit."""
    os.chdir(config["workdir"])
    root = os.path.realpath(os.getcwd())
    sandbox_os.drop_privileges(in_user_ns)
    sandbox_os.die_with_parent(os.getppid())  # after the credentials change, which clears it
    sandbox_os.set_limits(config["memory_mb"], config["cpu_s"], config["file_mb"], config["nproc"], 64)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if config["seccomp"]:
        why = sandbox_os.forbid_exec_and_fork()
        if why:
            _report(config, f"no seccomp filter ({why})")
    os.close(config["status_fd"])
    if config["hook"]:
        sandbox_hook.install(root, os.getpid())
    run(code, config["result_fd"], config["cap"])


def run(code: str, result_fd: int, cap: int) -> None:
    """Run ``code`` like a REPL cell and write ``{"ok", "value", "error", "kind"}`` to ``result_fd``."""
    result: dict[str, bool | str | None] = {"ok": True, "value": None, "error": None, "kind": None}
    ns = {"__name__": "__main__", "__builtins__": builtins}
    try:
        tree = ast.parse(code, "<sandbox>", "exec")
        last = None
        if tree.body and isinstance(final := tree.body[-1], ast.Expr):
            tree.body.pop()
            last = ast.Expression(final.value)
        exec(compile(tree, "<sandbox>", "exec"), ns)
        if last is not None:
            value = eval(compile(last, "<sandbox>", "eval"), ns)
            if value is not None:
                text = repr(value)
                if len(text) > cap:
                    text = text[:cap] + f"... [value truncated: {len(text) - cap} more characters]"
                result["value"] = text
    except MemoryError:
        ns.clear()
        result.update(ok=False, kind="memory")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            result.update(ok=False, kind="error", error=f"SystemExit: {exc.code}")
    except BaseException as exc:
        ns.clear()
        line = None
        if isinstance(exc, SyntaxError) and exc.filename == "<sandbox>":
            line = exc.lineno
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<sandbox>":
                line = tb.tb_lineno
            tb = tb.tb_next
        cause: BaseException | None = exc
        seen = 0
        while cause is not None and not isinstance(cause, sandbox_hook.SandboxViolation) and seen < 20:
            cause, seen = cause.__cause__ or cause.__context__, seen + 1
        if isinstance(cause, sandbox_hook.SandboxViolation):
            message, kind = str(cause), "violation"
        else:
            detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            message = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            kind = "error"
        if len(message) > 500:
            message = message[:500] + "..."
        if line:
            message += f" (line {line})"
        result.update(ok=False, kind=kind, error=message)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    try:
        os.write(result_fd, json.dumps(result).encode())
    except BaseException:
        pass
    os._exit(0)


def main() -> None:
    """Read the configuration and the code, then become the supervisor."""
    config = json.loads(sys.argv[1])
    code = sys.stdin.buffer.read().decode("utf-8", "replace")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(0, closefd=False)
    # typeshed types the standard streams as TextIO, which has no reconfigure; here they are TextIOWrappers
    sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)  # type: ignore[union-attr]
    sys.stderr.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)  # type: ignore[union-attr]
    supervisor(config, code)


if __name__ == "__main__":
    main()
