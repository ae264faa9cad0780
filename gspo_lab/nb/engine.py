"""The papermill engine ``gspo``: papermill's nbclient engine with one fix, for jupyter/nbclient#312.

A cell that creates widgets sometimes waited for its whole timeout although the kernel's ``execute_reply`` was
already in the shell socket, then carried on without error. Mechanism: nbclient's ``_async_poll_for_reply`` makes
*one* ``shell_channel.get_msg(timeout=<cell timeout>)`` call; jupyter_client's ``AsyncZMQSocketChannel`` turns that
into one ``zmq.asyncio`` ``socket.poll``, which sleeps until the socket's edge-triggered ``ZMQ_FD`` wakes the event
loop. When that wake-up is missed, only the poll's timer ends the wait, and pyzmq's final zero-timeout poll then
finds the reply. A *fresh* poll checks ``ZMQ_EVENTS`` at once, so the shell channel here (``SlicedShellChannel``)
serves a ``get_msg(timeout)`` as polls of at most ``POLL_SLICE_S`` until the same deadline: a missed wake-up costs
one slice. Everything else (deadline and timeout errors, the iopub "idle" wait, kernel-death checks) is nbclient's
own code, unchanged. Importing this module registers the engine with papermill.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from queue import Empty
from time import monotonic

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines
from papermill.log import logger
from traitlets import Type

__all__ = ["ENGINE_NAME", "POLL_SLICE_S", "SlicedShellChannel", "SlicedKernelClient", "SlicedPollNotebookClient",
           "SlicedPollEngine"]  # fmt: skip

ENGINE_NAME = "gspo"
POLL_SLICE_S = 0.5
"""Longest single wait on the shell socket. bench/nbclient_stall.py, 100 runs each: stock 5 stalls of 12 s, this 0."""


class SlicedShellChannel(AsyncZMQSocketChannel):
    """jupyter_client's async channel, but a ``get_msg(timeout)`` waits in polls of at most ``POLL_SLICE_S``.

    Same contract as the parent: the next message, or ``queue.Empty`` once ``timeout`` seconds passed without one
    (``None``: wait forever). Only the length of each underlying ``socket.poll`` changes (module docstring).
    """

    async def get_msg(self, timeout: float | None = None) -> dict:  # type: ignore[override]
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            left = POLL_SLICE_S if deadline is None else max(0.0, deadline - monotonic())
            try:
                return await super().get_msg(timeout=min(POLL_SLICE_S, left))
            except Empty:
                if deadline is not None and monotonic() >= deadline:
                    raise


class SlicedKernelClient(AsyncKernelClient):
    """The async kernel client nbclient uses, with the sliced shell channel (iopub, stdin, control unchanged)."""

    shell_channel_class = Type(SlicedShellChannel)  # type: ignore[assignment]


class SlicedPollNotebookClient(PapermillNotebookClient):
    """papermill's notebook client whose kernel manager hands out ``SlicedKernelClient``s."""

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.client_factory = SlicedKernelClient
        # IPC (Unix sockets in a private temporary folder) instead of unencrypted TCP on localhost: no port another
        # user could reach, and no "Kernel is running over TCP without encryption" warning per notebook
        self.ipc_dir = Path(tempfile.mkdtemp(prefix="gspo-kernel-"))
        km.transport, km.ip = "ipc", str(self.ipc_dir / "kernel")
        return km


class SlicedPollEngine(NBClientEngine):
    """papermill's nbclient engine running ``SlicedPollNotebookClient``; records the kernelspec it ran."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man,
        kernel_name,
        log_output=False,
        stdout_file=None,
        stderr_file=None,
        start_timeout=60,
        execution_timeout=None,
        **kwargs,
    ):
        from jupyter_client.kernelspec import KernelSpecManager

        spec = KernelSpecManager().get_kernel_spec(kernel_name)
        nb_man.nb.metadata["kernelspec"] = {
            "name": kernel_name,
            "display_name": spec.display_name,
            "language": spec.language,
        }
        timeout = execution_timeout or kwargs.get("timeout")  # as NBClientEngine
        for unused in ("input_path", "timeout", "startup_timeout"):
            kwargs.pop(unused, None)
        client = SlicedPollNotebookClient(
            nb_man,
            timeout=timeout,
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=logger,
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
            **kwargs,
        )
        try:
            return client.execute()
        finally:
            if getattr(client, "ipc_dir", None) is not None:
                shutil.rmtree(client.ipc_dir, ignore_errors=True)


papermill_engines.register(ENGINE_NAME, SlicedPollEngine)
