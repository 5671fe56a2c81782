"""The Python kernel of every server on the course's one-machine hub (the servers' kernel
specification, grading/hub/kernel-data/kernels/python3, which the hub puts first on
JUPYTER_PATH): ipykernel, with nothing that listens on the machine's loopback, which every user
shares.

    python -m grading.hub.kernel -f CONNECTION_FILE

The kernel's five channels already use ZeroMQ's ipc transport in the server's private /tmp
(`--KernelManager.transport=ipc`). ipykernel still listened on TCP in two places, both
reachable by any classmate's process on the same machine:

- the IOPub pipe, a ZeroMQ PULL socket on a random loopback port, through which forked
  children send their output: a message without its 16 random bytes is printed to the kernel's
  stderr, which ipykernel sends to the notebook, so a classmate's process wrote whatever it
  liked (and as much) into the output of the cell running in alice's or the instructor's
  notebook. Here it listens on an ipc socket in the kernel's private runtime folder;
- the debugger: once a user turns JupyterLab's debugger on, debugpy listens on a loopback port
  for a debug client, without any credential, for the rest of the kernel's life; after she
  turns it off, any process of any user could attach there and evaluate code in her kernel, as
  her. debugpy listens only on TCP, so on a machine whose users share the network the kernel
  reports no debugger (JupyterLab then offers none). In a pod (grading/k8s), whose network is
  its own, the debugger stays.
"""

import os
import uuid

import zmq
from ipykernel import debugger, iostream, kernelapp
from jupyter_core.paths import jupyter_runtime_dir
from zmq.eventloop.zmqstream import ZMQStream


def _setup_pipe_in(self):
    """ipykernel's IOPubThread._setup_pipe_in (7.x), binding an ipc socket in the runtime
    folder (the server's private /tmp) instead of a loopback TCP port."""
    self._pipe_uuid = os.urandom(16)
    pipe_in = self.socket.context.socket(zmq.PULL)
    pipe_in.linger = 0
    folder = jupyter_runtime_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    self._pipe_address = f"ipc://{folder}/kernel-pipe-{uuid.uuid4().hex}"
    pipe_in.bind(self._pipe_address)
    self._pipe_in = ZMQStream(pipe_in, self.io_loop)
    self._pipe_in.on_recv(self._handle_pipe_msg)


def _setup_pipe_out(self):
    """ipykernel's IOPubThread._setup_pipe_out, connecting to that ipc socket."""
    context = zmq.Context()
    pipe_out = context.socket(zmq.PUSH)
    pipe_out.linger = 3000
    pipe_out.connect(self._pipe_address)
    return context, pipe_out


def main():
    iostream.IOPubThread._setup_pipe_in = _setup_pipe_in
    iostream.IOPubThread._setup_pipe_out = _setup_pipe_out
    debugger._is_debugpy_available = False  # read by ipykernel where it decides on a debugger
    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
